// Collectives over peer access between the GPUs of one process (all-reduce sum and all-gather),
// for augur's communication-pattern selector. Every rank launches the same kernel with the same
// grid; block b of one rank meets block b of every other rank at each barrier through flags in
// peer memory (stored with release, polled with acquire, system scope), so no host round trip is
// needed between ranks.
//
// Buffers are "registered": each rank allocated them with cuMemAlloc, enabled peer access to
// every other rank's context, and every rank knows every rank's addresses (struct Peers).
//
// Barrier values: each block keeps a counter in its rank's own memory, read at the start of a
// call and advanced at its end. Every rank makes the same calls with the same grids, so block b's
// counters agree on every rank; flags only grow, and a wait is for "flag >= value" (wrap-aware),
// so a late reader never misses a signal that a fast peer already overwrote with a later one.
// Nothing changes between calls on the host side: the calls can be captured in a CUDA graph.
//
// Element types: f32 and bf16 (as raw 16-bit; sums are taken in f32, bf16 rounded to nearest
// even). Data moves as 16-byte vectors; the elements past the last whole vector are handled one
// by one.

#ifndef MAX_RANKS
#error "MAX_RANKS comes from the host as -DMAX_RANKS=... (kernels/src/cuda/comm.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef MAX_BLOCKS
#error "MAX_BLOCKS comes from the host as -DMAX_BLOCKS=... (kernels/src/cuda/comm.rs; kernels/src/cuda/module.rs)"
#endif
// Layout of a rank's u32 signal words: flags [MAX_BLOCKS][MAX_RANKS], the copy-engine pattern's
// flags [2][MAX_RANKS] (host side), then the block counters [MAX_BLOCKS].
#define COUNTERS (MAX_BLOCKS * MAX_RANKS + 2 * MAX_RANKS)

typedef unsigned long long u64;

struct Peers {
    // Per rank: the data buffer every peer reads or writes (all-reduce: the input; all-gather:
    // the whole output, each rank's piece in place), the all-reduce scratch (two-shot), and the
    // flags (MAX_BLOCKS x MAX_RANKS u32, flag [b][q] written by rank q's block b).
    u64 buf[MAX_RANKS];
    u64 tmp[MAX_RANKS];
    u64 sig[MAX_RANKS];
    // The LL patterns' staging buffers (see below).
    u64 ll[MAX_RANKS];
    // All-gather: byte offsets of the pieces, piece q = [off[q], off[q+1]).
    u64 off[MAX_RANKS + 1];
};

// st_release_sys, ld_acquire_sys, ld_cg (a load that bypasses L1: peer data written since the
// last call must not come from a stale line), st_pair_v2 / ld_pair_v2 and now_ns are in
// portable.h, one version per vendor.

// Every wait on a peer gives up after WAIT_LIMIT_NS (a peer that never arrives: a rank skipped a
// call, or died): the kernel traps, so the caller gets a launch failure instead of a hang.
#define WAIT_LIMIT_NS 20000000000ull

__device__ __forceinline__ void check_wait(unsigned& spins, u64& since) {
    if ((++spins & 1023u) == 0) {
        u64 t = now_ns();
        if (since == 0) {
            since = t;
        } else if (t - since > WAIT_LIMIT_NS) {
            AUGUR_TRAP();
        }
    }
}

// Wait (one thread) until the word at `w` reaches `value` (wrapping), as a peer writes it (a
// release store, or its stream's write); gives up after WAIT_LIMIT_NS.
__device__ __forceinline__ void wait_geq(const unsigned* w, unsigned value) {
    unsigned spins = 0;
    u64 since = 0;
    while ((int)(ld_acquire_sys(w) - value) < 0) {
        check_wait(spins, since);
    }
}

// Block b of this rank meets block b of every rank: every write of this block before the
// barrier is visible to every rank's block b after it.
__device__ void barrier(const Peers& p, int rank, int world, unsigned value) {
    __syncthreads();
    if (threadIdx.x < world) {
        int q = threadIdx.x;
        // Release at system scope is cumulative: the block's writes ordered before it by
        // __syncthreads are visible to whoever acquires the flag.
        st_release_sys((unsigned*)p.sig[q] + blockIdx.x * MAX_RANKS + rank, value);
        wait_geq((const unsigned*)p.sig[rank] + blockIdx.x * MAX_RANKS + q, value);
    }
    __syncthreads();
}

// This block's counter: the value its barriers start from in this call.
__device__ __forceinline__ unsigned call_base(const Peers& p, int rank) {
    return ((const volatile unsigned*)p.sig[rank])[COUNTERS + blockIdx.x];
}

// Advance this block's counter by the `used` barrier values of this call (after its last
// barrier, whose closing __syncthreads every thread of the block has passed).
__device__ __forceinline__ void call_end(const Peers& p, int rank, unsigned base, unsigned used) {
    if (threadIdx.x == 0) ((unsigned*)p.sig[rank])[COUNTERS + blockIdx.x] = base + used;
}

// Spin for `ns` nanoseconds (one thread): keeps a stream busy while the host enqueues the calls
// to be timed, so their time is the device's and not the launches'.
extern "C" __global__ void spin_ns(u64 ns) {
    u64 t0 = now_ns();
    while (now_ns() - t0 < ns) {
    }
}

// ---- element types -----------------------------------------------------------------------

struct F32 {
    static const int PER = 4;  // elements per 16-byte vector
    typedef float scalar;
    __device__ static void add(float* acc, uint4 v) {
        acc[0] += __uint_as_float(v.x);
        acc[1] += __uint_as_float(v.y);
        acc[2] += __uint_as_float(v.z);
        acc[3] += __uint_as_float(v.w);
    }
    __device__ static uint4 pack(const float* acc) {
        return make_uint4(__float_as_uint(acc[0]), __float_as_uint(acc[1]),
                          __float_as_uint(acc[2]), __float_as_uint(acc[3]));
    }
    __device__ static float load1(const void* base, u64 i) {
        return ((const volatile float*)base)[i];
    }
    __device__ static void store1(void* base, u64 i, float v) { ((float*)base)[i] = v; }
};

__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
    return __uint_as_float(((unsigned)h) << 16);
}

__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    return (unsigned short)(u >> 16);
}

// A 16-bit float type, 8 to a 16-byte vector, summed in f32: its conversions in `Bits`
// (BF16Bits here, F16Bits with the reduce-scatter's kernels below).
template <class Bits>
struct Half {
    static const int PER = 8;
    typedef unsigned short scalar;
    __device__ static void add2(float* acc, unsigned w) {
        acc[0] += Bits::to_f32((unsigned short)(w & 0xffff));
        acc[1] += Bits::to_f32((unsigned short)(w >> 16));
    }
    __device__ static void add(float* acc, uint4 v) {
        add2(acc, v.x);
        add2(acc + 2, v.y);
        add2(acc + 4, v.z);
        add2(acc + 6, v.w);
    }
    __device__ static unsigned pack2(const float* a) {
        return (unsigned)Bits::from_f32(a[0]) | ((unsigned)Bits::from_f32(a[1]) << 16);
    }
    __device__ static uint4 pack(const float* acc) {
        return make_uint4(pack2(acc), pack2(acc + 2), pack2(acc + 4), pack2(acc + 6));
    }
    __device__ static float load1(const void* base, u64 i) {
        return Bits::to_f32(((const volatile unsigned short*)base)[i]);
    }
    __device__ static void store1(void* base, u64 i, float v) {
        ((unsigned short*)base)[i] = Bits::from_f32(v);
    }
};

struct BF16Bits {
    __device__ static float to_f32(unsigned short h) { return bf16_to_f32(h); }
    __device__ static unsigned short from_f32(float f) { return f32_to_bf16(f); }
};
typedef Half<BF16Bits> BF16;

// Sum of vector i over every rank's buffer, in rank order (every rank gets the same bits).
template <class E>
__device__ __forceinline__ uint4 sum_vec(const u64* bufs, int rank, int world, u64 i) {
    uint4 v[MAX_RANKS];
#pragma unroll
    for (int q = 0; q < MAX_RANKS; q++) {
        if (q < world) {
            const uint4* src = (const uint4*)bufs[q] + i;
            v[q] = q == rank ? *src : ld_cg(src);
        }
    }
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int q = 0; q < MAX_RANKS; q++) {
        if (q < world) E::add(acc, v[q]);
    }
    return E::pack(acc);
}

// The elements past the last whole vector, one by one (block 0 only).
template <class E>
__device__ void sum_tail(const Peers& p, int world, u64 n, void* out) {
    if (blockIdx.x != 0) return;
    u64 start = n / E::PER * E::PER;
    for (u64 i = start + threadIdx.x; i < n; i += blockDim.x) {
        float acc = 0.0f;
        for (int q = 0; q < world; q++) acc += E::load1((const void*)p.buf[q], i);
        E::store1(out, i, acc);
    }
}

// One-shot all-reduce: after everyone's input is ready, each rank reads every rank's whole
// buffer and writes the sum to its own `out`; a closing barrier keeps a rank from overwriting
// its input while others still read it.
template <class E>
__device__ void all_reduce_one_shot(Peers p, int rank, int world, u64 n, void* out) {
    unsigned value = call_base(p, rank) + 1;
    barrier(p, rank, world, value);
    u64 nv = n / E::PER;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += stride)
        ((uint4*)out)[i] = sum_vec<E>(p.buf, rank, world, i);
    sum_tail<E>(p, world, n, out);
    barrier(p, rank, world, value + 1);
    call_end(p, rank, value - 1, 2);
}

// Two-shot all-reduce: reduce-scatter (rank r sums slice r of every input into its scratch),
// a barrier, then all-gather (each rank reads slice q from rank q's scratch). Block b handles the
// same positions of every slice on every rank, so the middle barrier of block b is enough.
template <class E>
__device__ void all_reduce_two_shot(Peers p, int rank, int world, u64 n, void* out) {
    unsigned value = call_base(p, rank) + 1;
    barrier(p, rank, world, value);
    u64 nv = n / E::PER;
    u64 slice = (nv + world - 1) / world;
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (u64 j = first; j < slice; j += stride) {
        u64 i = (u64)rank * slice + j;
        if (i < nv) ((uint4*)p.tmp[rank])[i] = sum_vec<E>(p.buf, rank, world, i);
    }
    sum_tail<E>(p, world, n, out);
    barrier(p, rank, world, value + 1);
    for (int k = 0; k < world; k++) {
        int q = (rank + k) % world;
        const uint4* src = (const uint4*)p.tmp[q];
        for (u64 j = first; j < slice; j += stride) {
            u64 i = (u64)q * slice + j;
            if (i < nv) ((uint4*)out)[i] = q == rank ? src[i] : ld_cg(src + i);
        }
    }
    call_end(p, rank, value - 1, 2);
    // No closing barrier: a rank passes the middle barrier only when every rank has read its
    // input, and writes its scratch again only after the next call's opening barrier, which no
    // rank reaches before it has read every scratch.
}

// Bytes [lo, hi) from `src` to `dst` (the same offsets in both), 16 bytes at a time where both
// are aligned, by the whole grid.
__device__ void copy_range(char* dst, const char* src, u64 lo, u64 hi, bool remote_src) {
    if (hi <= lo) return;
    u64 a = (lo + 15) & ~(u64)15;  // first aligned byte
    u64 b = hi & ~(u64)15;         // end of the aligned body
    u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 stride = (u64)gridDim.x * blockDim.x;
    if (a >= b) {
        for (u64 i = lo + tid; i < hi; i += stride) dst[i] = ((const volatile char*)src)[i];
        return;
    }
    for (u64 i = lo + tid; i < a; i += stride) dst[i] = ((const volatile char*)src)[i];
    for (u64 i = b + tid; i < hi; i += stride) dst[i] = ((const volatile char*)src)[i];
    const uint4* s = (const uint4*)(src + a);
    uint4* d = (uint4*)(dst + a);
    u64 nv = (b - a) / 16;
    for (u64 i = tid; i < nv; i += stride) d[i] = remote_src ? ld_cg(s + i) : s[i];
}

extern "C" __global__ void __launch_bounds__(512)
    all_reduce_one_shot_f32(Peers p, int rank, int world, u64 n, void* out) {
    all_reduce_one_shot<F32>(p, rank, world, n, out);
}
extern "C" __global__ void __launch_bounds__(512)
    all_reduce_one_shot_bf16(Peers p, int rank, int world, u64 n, void* out) {
    all_reduce_one_shot<BF16>(p, rank, world, n, out);
}
extern "C" __global__ void __launch_bounds__(512)
    all_reduce_two_shot_f32(Peers p, int rank, int world, u64 n, void* out) {
    all_reduce_two_shot<F32>(p, rank, world, n, out);
}
extern "C" __global__ void __launch_bounds__(512)
    all_reduce_two_shot_bf16(Peers p, int rank, int world, u64 n, void* out) {
    all_reduce_two_shot<BF16>(p, rank, world, n, out);
}

// All-gather in place, pull: each rank reads every other rank's piece from that rank's buffer
// into its own. Opening barrier: the pieces are ready; closing barrier: nobody still reads this
// rank's piece when it returns.
extern "C" __global__ void __launch_bounds__(512)
    all_gather_pull(Peers p, int rank, int world) {
    unsigned value = call_base(p, rank) + 1;
    barrier(p, rank, world, value);
    for (int k = 1; k < world; k++) {
        int q = (rank + k) % world;
        copy_range((char*)p.buf[rank], (const char*)p.buf[q], p.off[q], p.off[q + 1], true);
    }
    barrier(p, rank, world, value + 1);
    call_end(p, rank, value - 1, 2);
}

// All-gather in place, push: each rank writes its piece into every other rank's buffer. Opening
// barrier: every rank is done with its buffer's previous contents; closing barrier: every piece
// has arrived.
extern "C" __global__ void __launch_bounds__(512)
    all_gather_push(Peers p, int rank, int world) {
    unsigned value = call_base(p, rank) + 1;
    barrier(p, rank, world, value);
    for (int k = 1; k < world; k++) {
        int q = (rank + k) % world;
        copy_range((char*)p.buf[q], (const char*)p.buf[rank], p.off[rank], p.off[rank + 1],
                   false);
    }
    barrier(p, rank, world, value + 1);
    call_end(p, rank, value - 1, 2);
}

// ---- low-latency (LL) patterns -----------------------------------------------------------
// NCCL's LL protocol: every 4-byte word travels with the call's epoch in one 8-byte store into
// the receiver's staging buffer, and the receiver polls its own memory until the flag equals the
// epoch. No barrier at all: one one-way trip over the link. The staging buffer has two slots
// (epoch parity): a peer can be at most one call ahead (it cannot finish call e + 1 before this
// rank has sent its words of call e + 1, which it does only after finishing call e), so it never
// writes the slot this rank is reading. Epochs start at 1 (staging is zeroed), one per LL call.
//
// Staging layout per rank: [2 slots][world sources][ll_words] pairs (u32 data, u32 flag); an
// all-gather uses a slot as one run of world x ll_words pairs.

__device__ __forceinline__ void st_pair(u64 addr, unsigned d, unsigned f) {
    st_pair_v2(addr, d, f);
}

__device__ __forceinline__ unsigned ld_pair_wait(u64 addr, unsigned epoch) {
    unsigned d, f, spins = 0;
    u64 since = 0;
    for (;;) {
        ld_pair_v2(addr, d, f);
        if (f == epoch) return d;
        check_wait(spins, since);
    }
}

// All-reduce: every rank sends its n-element input (as words; bf16 pairs share a word) to every
// rank's staging [slot][rank], then sums the words of every source in rank order.
template <class E>
__device__ void all_reduce_ll(Peers p, int rank, int world, u64 n, void* out, const void* in,
                              unsigned epoch, u64 ll_words) {
    u64 words = (n * sizeof(typename E::scalar) + 3) / 4;
    u64 slot = epoch & 1;
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (u64 i = first; i < words; i += stride) {
        unsigned w = ((const unsigned*)in)[i];
        for (int k = 0; k < world; k++) {
            int q = (rank + k) % world;
            st_pair(p.ll[q] + (((slot * world + rank) * ll_words) + i) * 8, w, epoch);
        }
    }
    for (u64 i = first; i < words; i += stride) {
        unsigned w[MAX_RANKS];
        for (int q = 0; q < world; q++)
            w[q] = ld_pair_wait(p.ll[rank] + (((slot * world + q) * ll_words) + i) * 8, epoch);
        if (sizeof(typename E::scalar) == 4) {
            float acc = 0.0f;
            for (int q = 0; q < world; q++) acc += __uint_as_float(w[q]);
            ((float*)out)[i] = acc;
        } else {
            float lo = 0.0f, hi = 0.0f;
            for (int q = 0; q < world; q++) {
                lo += bf16_to_f32((unsigned short)(w[q] & 0xffff));
                hi += bf16_to_f32((unsigned short)(w[q] >> 16));
            }
            unsigned short* o = (unsigned short*)out;
            o[2 * i] = f32_to_bf16(lo);
            if (2 * i + 1 < n) o[2 * i + 1] = f32_to_bf16(hi);
        }
    }
}

extern "C" __global__ void __launch_bounds__(512)
    all_reduce_ll_f32(Peers p, int rank, int world, u64 n, void* out, unsigned epoch,
                      u64 ll_words) {
    all_reduce_ll<F32>(p, rank, world, n, out, (const void*)p.buf[rank], epoch, ll_words);
}
extern "C" __global__ void __launch_bounds__(512)
    all_reduce_ll_bf16(Peers p, int rank, int world, u64 n, void* out, unsigned epoch,
                       u64 ll_words) {
    all_reduce_ll<BF16>(p, rank, world, n, out, (const void*)p.buf[rank], epoch, ll_words);
}

// All-gather in place: pieces at 4-byte aligned offsets (checked by the host). Each rank sends
// the words of its piece to every other rank's staging [slot][0][word], then copies every other
// piece's words from its staging into its buffer as they arrive.
extern "C" __global__ void __launch_bounds__(512)
    all_gather_ll(Peers p, int rank, int world, unsigned epoch, u64 ll_words) {
    u64 slot = epoch & 1;
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 base = slot * world * ll_words;
    const unsigned* mine = (const unsigned*)p.buf[rank];
    u64 lo = p.off[rank] / 4, hi = p.off[rank + 1] / 4;
    for (u64 i = lo + first; i < hi; i += stride) {
        unsigned w = mine[i];
        for (int k = 1; k < world; k++) {
            int q = (rank + k) % world;
            st_pair(p.ll[q] + (base + i) * 8, w, epoch);
        }
    }
    unsigned* dst = (unsigned*)p.buf[rank];
    for (int k = 1; k < world; k++) {
        int q = (rank + k) % world;
        u64 a = p.off[q] / 4, b = p.off[q + 1] / 4;
        for (u64 i = a + first; i < b; i += stride)
            dst[i] = ld_pair_wait(p.ll[rank] + (base + i) * 8, epoch);
    }
}

// ---- a tensor-parallel layer's all-gather beside its GEMM (issue 24) ----------------------
// The producer of the producer/consumer patterns (`pc-push:C:S`, `pc-pull:C:S`, `own-bulk`):
// launched with S blocks on a stream of its own while cuBLASLt's GEMMs, told to leave S SMs
// free, run on the others. Every GPU's rows move to every other GPU in C pieces, piece j of
// every peer before piece j + 1 of any; after the last block has moved its part of a piece, the
// piece's arrival word (in the receiver's memory) gets the call's epoch, which the receiver's
// compute stream waits for (cuStreamWaitValue32) before that piece's GEMM. Pushed: this GPU's
// rows written into the peers (NVLink writes); pulled: the peers' rows read into this GPU.
// The host orders the launch after every peer's ready word (their rows are there, and they are
// done reading the last call's) with stream waits, and the receiver's GEMMs after the arrival
// words likewise; or (`own-bulk`: TpPieces' `ready` and `mine` set) the kernel spins on the
// ready words itself and its block 0 on this GPU's arrival words before the launch ends, so the
// GEMM only follows the launch: own-bulk's six stream waits cost about 13 us a call on four
// H200s. (`pc-push` / `pc-pull` on two and four GPUs: `ready` only.)
#ifndef TP_MAX_PIECES
#error "TP_MAX_PIECES comes from the host as -DTP_MAX_PIECES=... (kernels/src/cuda/module.rs)"
#endif
// 16-byte loads in flight per thread: with a few blocks, peer loads need many outstanding.
#define TP_UNROLL 8

struct TpPieces {
    // Per peer q (q != rank): piece 0 of what this GPU moves for q, from and to (byte
    // addresses; piece j at + j * bytes), and q's arrival word of piece 0 (piece j: the j-th
    // word after it) in the receiver's memory.
    u64 src[MAX_RANKS];
    u64 dst[MAX_RANKS];
    u64 flag[MAX_RANKS];
    // This GPU's block counters, [MAX_RANKS][TP_MAX_PIECES] u32, zero between calls.
    u64 counters;
    // 0, or the kernel waits itself (no stream waits around it): `ready` this GPU's flags
    // (peer q's ready word at word q), read before the first copy; `mine` this GPU's arrival
    // word of peer 0's piece 0 (peer q's piece j at word q x TP_MAX_PIECES + j), waited for by
    // block 0 before the launch ends (pushed: the peers' rows are here once it ends).
    u64 ready;
    u64 mine;
};

extern "C" __global__ void __launch_bounds__(512)
    tp_copy_pieces(TpPieces p, int rank, int world, u64 bytes, int pieces, unsigned epoch,
                   int remote_src) {
    u64 nv = bytes / 16;  // the host checks that pieces are whole 16-byte vectors
    // Every thread of the grid takes every T-th vector (T threads in all), TP_UNROLL of them in
    // flight: each block has a share of every piece however small. (Blocks of TP_UNROLL x
    // blockDim consecutive vectors left most of a one-block-per-SM grid idle below 8 MiB a
    // piece: a 2 MiB piece was 32 blocks' work.)
    u64 t = (u64)gridDim.x * blockDim.x;
    u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (p.ready) {
        if (threadIdx.x == 0) {
            for (int q = 0; q < world; q++) {
                if (q != rank) wait_geq((const unsigned*)p.ready + q, epoch);
            }
        }
        __syncthreads();
    }
    for (int j = 0; j < pieces; j++) {
        for (int i = 1; i < world; i++) {
            int q = (rank + i) % world;
            const uint4* s = (const uint4*)(p.src[q] + (u64)j * bytes);
            uint4* d = (uint4*)(p.dst[q] + (u64)j * bytes);
            for (u64 c0 = first; c0 < nv; c0 += t * TP_UNROLL) {
                uint4 v[TP_UNROLL];
#pragma unroll
                for (int u = 0; u < TP_UNROLL; u++) {
                    u64 x = c0 + (u64)u * t;
                    if (x < nv) v[u] = remote_src ? ld_cg(s + x) : s[x];
                }
#pragma unroll
                for (int u = 0; u < TP_UNROLL; u++) {
                    u64 x = c0 + (u64)u * t;
                    if (x < nv) d[x] = v[u];
                }
            }
            // The block's writes before one thread's system fence (cumulative through the
            // barrier), then its count; the last block to count publishes the piece.
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence_system();
                unsigned* c = (unsigned*)p.counters + q * TP_MAX_PIECES + j;
                if (atomicAdd(c, 1u) == gridDim.x - 1) {
                    // Every block has counted: nothing adds to it again in this launch.
                    *c = 0;
                    __threadfence_system();
                    st_release_sys((unsigned*)p.flag[q] + j, epoch);
                }
            }
        }
    }
    if (p.mine && blockIdx.x == 0 && threadIdx.x == 0) {
        for (int q = 0; q < world; q++) {
            for (int j = 0; q != rank && j < pieces; j++) {
                wait_geq((const unsigned*)p.mine + q * TP_MAX_PIECES + j, epoch);
            }
        }
    }
}

// The consumer side of the GEMM + reduce-scatter's producer/consumer pattern (`pc-reduce:C:S`):
// S blocks on the communication stream sum, for one piece of this GPU's rows, every GPU's
// partial product of those rows (its own, and the peers' by NVLink reads) in f32, rank order,
// rounded once into `out`. The host launches it after the piece's partial is computed on every
// GPU (stream waits on words the GPUs' compute streams write).

__device__ __forceinline__ float f16_to_f32(unsigned short h) {
    unsigned sign = ((unsigned)h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {  // zero or subnormal: m x 2^-24, exact in f32
        float v = (float)m * 5.9604644775390625e-8f;
        return __uint_as_float(__float_as_uint(v) | sign);
    }
    if (e == 31) return __uint_as_float(sign | 0x7f800000u | (m << 13));  // inf, NaN
    return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

__device__ __forceinline__ unsigned short f32_to_f16(float f) {
    unsigned u = __float_as_uint(f);
    unsigned sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);   // NaN
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // rounds past 65504: inf
    if (a < 0x38800000u) {  // below 2^-14: a subnormal (or zero), m = round(|f| x 2^24)
        return (unsigned short)(sign | __float2uint_rn(__uint_as_float(a) * 16777216.0f));
    }
    unsigned r = a - 0x38000000u;  // the exponent rebiased (127 -> 15)
    r += 0xfffu + ((r >> 13) & 1u);  // round to nearest even
    return (unsigned short)(sign | (r >> 13));
}

struct F16Bits {
    __device__ static float to_f32(unsigned short h) { return f16_to_f32(h); }
    __device__ static unsigned short from_f32(float f) { return f32_to_f16(f); }
};
typedef Half<F16Bits> F16;

struct TpReduce {
    // Per rank q: this piece of this GPU's rows in q's partial product (q = rank: its own).
    u64 src[MAX_RANKS];
};

// Vectors per thread and source: every source's loads issued before any sum (world x 2 in
// flight), fewer than the copy's 8 per thread so that the sums (2 x 8 f32) and the loaded
// vectors fit the 128 registers a thread has at 512 threads.
#define TP_REDUCE_UNROLL 2

// `nv` 16-byte vectors (8 values each) of the piece into `out`.
template <class E>
__device__ void tp_reduce(const TpReduce& p, int rank, int world, u64 nv, uint4* out) {
    u64 chunk = (u64)blockDim.x * TP_REDUCE_UNROLL;
    for (u64 c0 = (u64)blockIdx.x * chunk; c0 < nv; c0 += (u64)gridDim.x * chunk) {
        uint4 v[MAX_RANKS][TP_REDUCE_UNROLL];
#pragma unroll
        for (int q = 0; q < MAX_RANKS; q++) {
            if (q < world) {
                const uint4* s = (const uint4*)p.src[q];
#pragma unroll
                for (int u = 0; u < TP_REDUCE_UNROLL; u++) {
                    u64 x = c0 + (u64)u * blockDim.x + threadIdx.x;
                    if (x < nv) v[q][u] = q == rank ? s[x] : ld_cg(s + x);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < TP_REDUCE_UNROLL; u++) {
            u64 x = c0 + (u64)u * blockDim.x + threadIdx.x;
            if (x >= nv) continue;
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
            for (int q = 0; q < MAX_RANKS; q++) {
                if (q < world) E::add(acc, v[q][u]);
            }
            out[x] = E::pack(acc);
        }
    }
}

extern "C" __global__ void __launch_bounds__(512)
    tp_reduce_piece_bf16(TpReduce p, int rank, int world, u64 nv, void* out) {
    tp_reduce<BF16>(p, rank, world, nv, (uint4*)out);
}
extern "C" __global__ void __launch_bounds__(512)
    tp_reduce_piece_f16(TpReduce p, int rank, int world, u64 nv, void* out) {
    tp_reduce<F16>(p, rank, world, nv, (uint4*)out);
}

// ---- `ll-bulk` (issue 24): a tensor-parallel layer's collective by the LL protocol above ------
// cuBLASLt's GEMM and, before it (all-gather) or after it (reduce-scatter), one launch of these
// on the compute stream: every 4-byte word (two 16-bit values) travels with the call's epoch in
// one 8-byte store into the receiver's staging (TpLl: every GPU's), which the receiver polls.
// No ready words, no flags, no barrier: the epoch's parity picks one of two slots, which a peer
// cannot reuse before this GPU is done with it (see the LL patterns above). Staging per GPU:
// [2 slots][world sources][words] pairs; `words` is a GPU's share (its rows of A, or the rows of
// the sum it receives) in 4-byte words.

struct TpLl {
    u64 ll[MAX_RANKS];
};

// All-gather in place: GPU q's rows are words [q x words, (q + 1) x words) of `a`; this call
// moves words [lo, hi) of every GPU's share (`ll-bulk`: all of it; `pc-ll:C:S`: piece j of C,
// one call per piece, on S blocks beside the GEMMs).
extern "C" __global__ void __launch_bounds__(512)
    tp_all_gather_ll(TpLl p, int rank, int world, u64 words, u64 lo, u64 hi, unsigned* a,
                     unsigned epoch) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 first = lo + (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 base = (epoch & 1) * world * words;
    const unsigned* mine = a + rank * words;
    for (u64 i = first; i < hi; i += stride) {
        const unsigned w = mine[i];
        for (int k = 1; k < world; k++) {
            const int q = (rank + k) % world;
            st_pair(p.ll[q] + (base + rank * words + i) * 8, w, epoch);
        }
    }
    for (int k = 1; k < world; k++) {
        const int q = (rank + world - k) % world;  // the order the peers send to this GPU
        for (u64 i = first; i < hi; i += stride)
            a[q * words + i] = ld_pair_wait(p.ll[rank] + (base + q * words + i) * 8, epoch);
    }
}

// Reduce-scatter: `part` is this GPU's partial of every GPU's rows (GPU q's at q x words);
// `out` gets the sum of every GPU's partial of this GPU's rows, in f32 in rank order, rounded
// once (as tp_reduce_piece rounds it).
template <class E>
__device__ void tp_reduce_scatter_ll(const TpLl& p, int rank, int world, u64 words,
                                     const unsigned* part, unsigned* out, unsigned epoch) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 base = (epoch & 1) * world * words;
    for (u64 i = first; i < words; i += stride) {
        for (int k = 1; k < world; k++) {
            const int q = (rank + k) % world;
            st_pair(p.ll[q] + (base + rank * words + i) * 8, part[q * words + i], epoch);
        }
    }
    for (u64 i = first; i < words; i += stride) {
        float acc[2] = {0.0f, 0.0f};
        for (int q = 0; q < world; q++) {
            const unsigned w = q == rank
                                   ? part[rank * words + i]
                                   : ld_pair_wait(p.ll[rank] + (base + q * words + i) * 8, epoch);
            E::add2(acc, w);
        }
        out[i] = E::pack2(acc);
    }
}

extern "C" __global__ void __launch_bounds__(512)
    tp_reduce_scatter_ll_bf16(TpLl p, int rank, int world, u64 words, const unsigned* part,
                              unsigned* out, unsigned epoch) {
    tp_reduce_scatter_ll<BF16>(p, rank, world, words, part, out, epoch);
}
extern "C" __global__ void __launch_bounds__(512)
    tp_reduce_scatter_ll_f16(TpLl p, int rank, int world, u64 words, const unsigned* part,
                             unsigned* out, unsigned epoch) {
    tp_reduce_scatter_ll<F16>(p, rank, world, words, part, out, epoch);
}
