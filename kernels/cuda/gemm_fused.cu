// The fused GEMM + collective kernels of issue 24 (tensor-parallel layers across GPUs), on
// gemm_tma.cu's persistent TMA GEMM (gemm_tma and its gates, the TMA kernels' argument macros
// and instances): kernels/src/cuda/module.rs appends this text to gemm.cu's and gemm_tma.cu's,
// one module.

// ---- Fused all-gather + GEMM (issue 24's fused pattern, `fused-pull:C:S`, `fused-push:C:S`) ---
//
// gemm_tma_ag_{f16,bf16}_{256,192,128}: one launch per GPU of a tensor-parallel layer's all-gather
// + GEMM, no global barrier: the grid's first `copy_blocks` blocks to start (by ticket, so that
// the blocks the others wait for are running) move rows between the GPUs, the rest run the
// persistent TMA GEMM over all of A, each tile once its rows are there. GPU `rank` holds rows
// [rank * rows, (rank + 1) * rows) of A in place in a buffer of all M = world x rows rows, cut
// in `pieces` pieces per GPU. For each peer q (rank + 1, rank + 2, ...) the copy blocks wait for
// q's ready word in this GPU's memory to reach the call's epoch (q started the call: its rows are
// written, and it has read its last call's), copy the pieces of rows (pulled: q's rows from q's
// A into this GPU's; pushed: this GPU's rows into q's A) and, after each piece, set its arrival
// word (this GPU's for a pull, q's for a push) to the epoch: the last of the copy blocks to count
// the piece does, after every block's system fence. The GEMM takes its own rows' tiles first,
// then each peer's in the order they arrive, and its producer waits for the arrival words of the
// pieces a tile reads (acquire, system scope) before its tensor-memory loads.

struct TpFused {
    // Per peer q: where its rows are read, where they are written, and the arrival word of
    // piece 0 (piece j's is j words on).
    unsigned long long src[MAX_RANKS], dst[MAX_RANKS], flag[MAX_RANKS];
    // This GPU's words: the peers' ready words [world], its arrival words
    // [MAX_RANKS][TP_MAX_PIECES] (peer q's piece j), the copy blocks' counters
    // [MAX_RANKS][TP_MAX_PIECES] (zero between calls), and the launch's tickets (one 64-bit
    // counter, never reset: a multiple of the grid between launches).
    unsigned long long ready, arrived, counters, tickets;
};

#ifdef AUGUR_WGMMA
#define FUSED_UNROLL 8

// ld_acquire_sys, st_release_sys, ld_cg and now_ns are portable.h's (the GEMM's prelude).

// This block's role in its launch, 0 to gridDim.x - 1 in the order the blocks took a ticket
// (`tickets`: a 64-bit counter never reset, a multiple of the grid between launches), so that
// the roles others wait for go to blocks that are running.
__device__ __forceinline__ int block_role(unsigned long long tickets) {
    __shared__ int role;
    if (threadIdx.x == 0) role = (int)(atomicAdd((unsigned long long*)tickets, 1ull) % gridDim.x);
    __syncthreads();
    return role;
}

// Wait for a word to reach `epoch` (wrapping); trap after GATE_TIMEOUT_NS.
__device__ __forceinline__ void wait_epoch(const unsigned* w, unsigned epoch) {
    if ((int)(ld_acquire_sys(w) - epoch) >= 0) return;
    const unsigned long long t0 = now_ns();
    while ((int)(ld_acquire_sys(w) - epoch) < 0) {
        __nanosleep(256);
        if (now_ns() - t0 > GATE_TIMEOUT_NS) __trap();
    }
}

// The copy blocks' part: block c of nblk.
__device__ __forceinline__ void fused_copy(const TpFused& f, int c, int nblk, int rank,
                                           int world, unsigned long long bytes, int pieces,
                                           unsigned epoch, int push) {
    const unsigned long long nv = bytes / 16;  // the host checks that pieces are whole vectors
    const unsigned long long chunk = (unsigned long long)blockDim.x * FUSED_UNROLL;
    for (int i = 1; i < world; i++) {
        const int q = (rank + i) % world;
        if (threadIdx.x == 0) wait_epoch((const unsigned*)f.ready + q, epoch);
        __syncthreads();
        for (int j = 0; j < pieces; j++) {
            const uint4* s = (const uint4*)(f.src[q] + (unsigned long long)j * bytes);
            uint4* d = (uint4*)(f.dst[q] + (unsigned long long)j * bytes);
            for (unsigned long long c0 = (unsigned long long)c * chunk; c0 < nv;
                 c0 += (unsigned long long)nblk * chunk) {
                uint4 v[FUSED_UNROLL];
#pragma unroll
                for (int u = 0; u < FUSED_UNROLL; u++) {
                    const unsigned long long x =
                        c0 + (unsigned long long)u * blockDim.x + threadIdx.x;
                    if (x < nv) v[u] = push ? s[x] : ld_cg(s + x);
                }
#pragma unroll
                for (int u = 0; u < FUSED_UNROLL; u++) {
                    const unsigned long long x =
                        c0 + (unsigned long long)u * blockDim.x + threadIdx.x;
                    if (x < nv) d[x] = v[u];
                }
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence_system();
                unsigned* cnt = (unsigned*)f.counters + q * TP_MAX_PIECES + j;
                if (atomicAdd(cnt, 1u) == (unsigned)nblk - 1) {
                    *cnt = 0;  // every copy block has counted: nothing adds to it in this launch
                    __threadfence_system();
                    st_release_sys((unsigned*)f.flag[q] + j, epoch);
                }
            }
        }
    }
}

// The GEMM's gate and tile order in the fused kernel; its stores are the standalone kernels'.
struct FusedGate : PlainStores {
    const unsigned* arrived;
    int rank, world, rows, pieces, tiles_m, push;
    unsigned epoch;
    unsigned seen[(MAX_RANKS * TP_MAX_PIECES + 31) / 32];  // pieces already seen arrived
    // Own rows first, then the peers' in the order they arrive (pulled: rank + 1, rank + 2, ...;
    // pushed: rank - 1, rank - 2, ...). Where a GPU's rows are whole tiles, exactly; otherwise
    // the tiles rotated to start at this GPU's first row.
    __device__ __forceinline__ int tile(int t) const {
        if (rows % WG_BM == 0) {
            const int per = rows / WG_BM, i = t / per;
            const int q = push ? (rank - i + world) % world : (rank + i) % world;
            return q * per + t % per;
        }
        return (t + rank * rows / WG_BM) % tiles_m;
    }
    // Peers' rows to wait for (the swapped GEMM loads B ahead of them).
    __device__ __forceinline__ bool may_wait() const { return world > 1; }
    __device__ __forceinline__ void wait(int row0) {
        const int m = world * rows, per = rows / pieces;
        const int last = (min(row0 + WG_BM, m) - 1) / per;
        bool fresh = false;
        for (int b = row0 / per; b <= last; ++b) {
            const int q = b / pieces, j = b % pieces;
            if (q == rank) continue;
            const int bit = q * TP_MAX_PIECES + j;
            if (seen[bit >> 5] & (1u << (bit & 31))) continue;
            wait_epoch(arrived + bit, epoch);
            seen[bit >> 5] |= 1u << (bit & 31);
            fresh = true;
        }
        // The rows were written through the generic proxy; the tensor-memory loads read
        // through the async one.
        if (fresh) asm volatile("fence.proxy.async.global;" ::: "memory");
    }
};

// SWAP = 0: the GEMM blocks run gemm_tma with BN-wide tiles; SWAP = 1 (gemm_tma_ag_swap_*, M <=
// BN: decode-sized M, every GPU's rows in one token tile): gemm_tma_swap with token tiles BN
// rows high, whose producer loads the weight's first stages before it waits for the peers' rows.
template <typename TT, int BN, int SWAP = 0>
__device__ __forceinline__ void gemm_tma_ag(int m, int n, int k, const TensorMap* tma,
                                            const TensorMap* tmb, const TensorMap* tmc,
                                            int splits, int kt_per, float* __restrict__ ws,
                                            const TpFused& f, int rank, int world, int rows,
                                            int pieces, int copy_blocks, unsigned epoch,
                                            int push) {
    const int r = block_role(f.tickets);
    if (r < copy_blocks) {
        const unsigned long long bytes = (unsigned long long)rows / pieces * k * 2;
        fused_copy(f, r, copy_blocks, rank, world, bytes, pieces, epoch, push);
        return;
    }
    FusedGate g;
    g.arrived = (const unsigned*)f.arrived;
    g.rank = rank;
    g.world = world;
    g.rows = rows;
    g.pieces = pieces;
    g.tiles_m = (m + WG_BM - 1) / WG_BM;
    g.push = push;
    g.epoch = epoch;
#pragma unroll
    for (int i = 0; i < (MAX_RANKS * TP_MAX_PIECES + 31) / 32; ++i) g.seen[i] = 0;
    if constexpr (SWAP) {
        gemm_tma_swap<TT, BN>(m, n, k, tma, tmb, tmc, splits, kt_per, ws, r - copy_blocks,
                              gridDim.x - copy_blocks, g);
    } else {
        gemm_tma<TT, BN>(m, n, k, tma, tmb, tmc, splits, kt_per, ws, r - copy_blocks,
                         gridDim.x - copy_blocks, g);
    }
}
#endif

#define TMA_AG_ARGS TMA_ARGS_BASE, TpFused f, int rank, int world, int rows, int pieces, \
    int copy_blocks, unsigned epoch, int push
#ifdef AUGUR_WGMMA
#define AUGUR_TMA_AG(T, TY, BN) \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_tma_ag_##TY##_##BN(TMA_AG_ARGS) { \
        gemm_tma_ag<T, BN>(m, n, k, &tma, &tmb, &tmc, splits, kt_per, ws, f, rank, world, rows,   \
                           pieces, copy_blocks, epoch, push);                                     \
    }
#else
#define AUGUR_TMA_AG(T, TY, BN) \
    extern "C" __global__ void gemm_tma_ag_##TY##_##BN(TMA_AG_ARGS) { __trap(); }
#endif
AUGUR_TMA_INSTANCES(AUGUR_TMA_AG)
#ifdef AUGUR_WGMMA
#define AUGUR_TMA_AG_SWAP(T, TY, MT) \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_tma_ag_swap_##TY##_##MT(TMA_AG_ARGS) { \
        gemm_tma_ag<T, MT, 1>(m, n, k, &tma, &tmb, &tmc, splits, kt_per, ws, f, rank, world, rows,     \
                              pieces, copy_blocks, epoch, push);                                     \
    }
#else
#define AUGUR_TMA_AG_SWAP(T, TY, MT) \
    extern "C" __global__ void gemm_tma_ag_swap_##TY##_##MT(TMA_AG_ARGS) { __trap(); }
#endif
AUGUR_TMA_SWAP_INSTANCES(AUGUR_TMA_AG_SWAP)

// ---- Fused GEMM + reduce-scatter (issue 24's `fused-reduce:S`, `fused-reduce:0`) ------------
//
// gemm_tma_rs_{f16,bf16}_{256,192,128}: one launch per GPU of a row-parallel layer's GEMM +
// reduce-scatter. GPU `rank` holds its columns of A (M x k) and of B (n x k) and receives rows
// [rank * rows, (rank + 1) * rows) of the sum over the GPUs of A_r B_rᵀ. The grid's first
// `reduce_blocks` blocks to start (by ticket) sum; the others run the persistent TMA GEMM over all
// M rows, with no partial product of their own: each 64-row half of a tile is rounded and stored by
// the tensor-memory unit straight into the staging of the GPU owning its rows (slot `rank` of its
// world x rows x n staging: peer memory through NVLink, or this GPU's own), clipped to the owner's
// rows by its tensor map (where a GPU's rows are not whole halves, small M, the half's pairs are
// stored one by one, each into its owner's slot). Once a unit's stores have completed (checked when
// the warpgroup stores its next unit, so the wait costs nothing), the warpgroup adds its 64-column
// chunks to the owner's done count of (rank, tile row) (a release add at system scope); the owner's
// summing blocks wait for every GPU's count of a tile row to reach `target` (the calls so far x 2
// warpgroups x ceil(n / 64)), then all of them sum the GPUs' partials of those rows in f32 in rank
// order and round once into `out`. Where each GPU's rows are whole tiles, the tiles run in phases,
// tile row t of every owner in phase t (the next GPUs' first, its own last), so the owners sum tile
// row t while the GEMMs go on; otherwise in order. Before its first store into a peer's staging in
// a call, a warpgroup waits for that peer's ready word in this GPU's memory to reach the call's
// epoch (the peer has started the call: its last call's sums are done).
//
// gemm_tma_rsa_{f16,bf16}_{256,192,128} (`fused-reduce:0`): the same GEMM with no staging and no
// summing blocks: each half-tile is added into the owner's rows of the sum (`out`) by a
// tensor-memory reduction (cp.reduce.async.bulk.tensor .add, in the 16-bit type; the small-M
// pairs by red.add.noftz), counted as above, and block 0 waits at the end for every GPU's counts
// of this GPU's tile rows, so the launch ends with the sum complete. Where the host says so
// (zero_bytes > 0; fused.rs, in_launch) the launch starts by zeroing its GPU's rows of the sum,
// every block a share; the last block done writes the ready words (rs_zero_announce), the
// owner's own included, and every warpgroup waits for its owners' words before its first
// addition, its own GPU's too; otherwise the host zeroed them and wrote the peers' words before
// the launch. `slot` and the maps then point at the owners' rows of the sum. With k split in
// `splits` ranges (`fused-reduce:0:K`, small M: more units than tiles), each range's partial is
// added in f32 (tensor-memory reductions of f32 boxes, or pair by pair by red.add.f32) into the
// owner's f32 sum `acc` (the one zeroed then) and counted the same way; the owner converts `acc`
// to `out`, at the launch's end where the launch zeroed it (rs_convert: every block a share of
// each tile row once it is counted), else after the launch (gemm_tma.cu's gemm_splitk_*, one
// plane): one rounding to the 16-bit type in all. With `prezeroed` (fused.rs: one and two
// GPUs, where it was checked) each GPU has two f32 sums taken in turn, each zeroed by rs_convert as it
// rounds it, two calls before: the launch neither zeroes nor waits for a ready word. Where the host says so (M <= 64, or the
// swapped GEMM's 64-row token tiles fit in one wave), the GEMM is the swapped one
// (gemm_tma_rsa_swap_{f16,bf16}_{32,64}; RsGate's store_swap*).

struct TpFusedRs {
    // Per owner q: its done counts ([world][tiles_m] u32; GPU r's of tile row g at r x tiles_m
    // + g).
    unsigned long long done[MAX_RANKS];
    // Per owner q: this GPU's slot of q's staging (rows x n halves), for the stores that are not
    // the tensor-memory unit's (each GPU's rows not whole 64-row halves of tiles).
    unsigned long long slot[MAX_RANKS];
    // This GPU's words: the peers' ready words (peer q's at ready + 4 q), its staging (world x
    // rows x n halves), its rows of the sum (rows x n), the launch's tickets.
    unsigned long long ready, staging, out, tickets;
    // Per owner q: q's f32 sum of its rows (rows x n), which the split partials are added into
    // (`fused-reduce:0:K`, K > 1; 0 otherwise).
    unsigned long long acc[MAX_RANKS];
    // `fused-reduce:0`: what the launch zeroes first (this GPU's rows of the sum, or its f32 sum
    // with k split) and its bytes, the launch's counter of blocks done zeroing (64-bit, never
    // reset: a multiple of the grid between launches), and per GPU q this GPU's ready word in
    // q's flags (its own included).
    unsigned long long zero, zero_bytes, zeroed;
    unsigned long long announce[MAX_RANKS];
    // `fused-reduce:0:K` on two f32 sums a GPU, calls in turn (non-zero; `acc` then points at
    // this call's): the call's sums were zeroed by the call before the last, as it rounded them
    // (rs_convert), so nothing is zeroed and no ready word waited for (see rs_convert); and the
    // swapped GEMM adds its partials by tensor-memory reductions (store_swap_split).
    unsigned long long prezeroed;
    // `fused-all` (the GEMM + all-reduce; ADD; 128-row tiles or the swapped GEMM as
    // `fused-reduce:0` takes them): non-zero. Every half-tile (or the swapped GEMM's box) is
    // added into every GPU's whole sum (M x n, `dst` the maps over each GPU's, at the tile's own
    // rows; each box filled once and reduced into every GPU's) and counted in every GPU's done
    // words; `zero` is this GPU's whole sum; the launch ends once every GPU has counted every
    // tile row. With k split (`fused-all:K`, or by itself at small M where few SMs read a deep
    // B) always `prezeroed`: the partials go in f32 into every GPU's whole f32 sum (`acc`, a
    // plane of M x n per k range, two a GPU in turn), and rs_convert rounds all of this GPU's
    // into `out` (its whole sum).
    unsigned long long all;
    // `fused-all` with k split: each k range's partials go into a plane of their own of every
    // GPU's f32 sum (`plane_rows` rows apart, M rounded up to whole 128-row tiles: no box
    // crosses into the next), so that each f32 value there is 0 + one partial per GPU, the same
    // on every GPU in either order on two; rs_convert adds the planes in order. 0 otherwise.
    unsigned long long plane_rows;
    // `fused-all` with a plane per source GPU as well (on more than two GPUs, where three or
    // more 16-bit or f32 additions onto one value would come in arrival order): GPU r's k
    // range s goes into plane r x splits + s, `source_rows` = splits x plane_rows rows from GPU
    // r - 1's, so that every plane holds 0 + one partial and every GPU adds the same planes in
    // the same order. Unsplit, the planes are 16-bit and each partial tile is stored into its
    // GPU's plane (no reduction, nothing to zero: `acc` then points at 16-bit planes). 0
    // otherwise.
    unsigned long long source_rows;
};

// Per owner q: a tensor map over slot `rank` of q's staging (rows x n, 64 x 64 boxes).
struct __align__(64) TpMaps {
    TensorMap dst[MAX_RANKS];
};

#ifdef AUGUR_WGMMA
__device__ __forceinline__ void unpack2(F16, unsigned w, float& lo, float& hi) {
    unsigned short a = (unsigned short)(w & 0xffff), b = (unsigned short)(w >> 16);
    asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"(a));
    asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"(b));
}
__device__ __forceinline__ void unpack2(BF16, unsigned w, float& lo, float& hi) {
    lo = __uint_as_float(w << 16);
    hi = __uint_as_float(w & 0xffff0000u);
}

// Add a pair of f32 values to a pair in global memory (any GPU's, over NVLink for a peer's).
__device__ __forceinline__ void red_add2_f32(float* p, float x, float y) {
    asm volatile("red.relaxed.sys.global.add.f32 [%0], %1;" ::"l"(p), "f"(x) : "memory");
    asm volatile("red.relaxed.sys.global.add.f32 [%0], %1;" ::"l"(p + 1), "f"(y) : "memory");
}

// Add a pair of 16-bit values to a pair in global memory (any GPU's, over NVLink for a peer's).
__device__ __forceinline__ void red_add2(F16, u16* p, unsigned v) {
    asm volatile("red.relaxed.sys.global.add.noftz.f16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void red_add2(BF16, u16* p, unsigned v) {
    asm volatile("red.relaxed.sys.global.add.noftz.bf16x2 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Add 8 16-bit values (one 16-byte vector) to 8 in global memory (any GPU's).
__device__ __forceinline__ void red_add8(F16, u16* p, uint4 v) {
    asm volatile("red.relaxed.sys.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};" ::"l"(p),
                 "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
__device__ __forceinline__ void red_add8(BF16, u16* p, uint4 v) {
    asm volatile("red.relaxed.sys.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(p),
                 "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

// Wait until every GPU has counted its whole partial of this GPU's tile row t (`done`: this
// GPU's counts, GPU q's of tile row t at q x tiles_m + t): the summing blocks before they sum a
// tile row, `fused-reduce:0:K` before it rounds one, `fused-reduce:0`'s block 0 before the
// launch ends.
__device__ __forceinline__ void wait_row_counted(const unsigned* done, int world, int tiles_m,
                                                 int t, unsigned target) {
    for (int q = 0; q < world; ++q) wait_epoch(done + q * tiles_m + t, target);
}

// Vectors per thread in flight in the sums (one GPU's partials at a time, summed in rank order
// into RS_UNROLL x 8 f32 accumulators).
#define RS_UNROLL 8

// The summing blocks' part, block c of nblk: this GPU's tile rows in order, each once every GPU
// has counted it whole, each cut in nblk equal ranges of 16-byte vectors (the blocks share a
// tile row, so that a row's sum takes all of them).
template <typename TT>
__device__ __forceinline__ void fused_reduce(const TpFusedRs& f, int c, int nblk, int rank,
                                             int world, int rows, int n, int tiles_m,
                                             unsigned target) {
    const int lo = rank * rows, hi = lo + rows;
    const unsigned* done = (const unsigned*)f.done[rank];
    const unsigned long long slot = (unsigned long long)rows * n / 8;  // vectors per GPU
    const uint4* st = (const uint4*)f.staging;
    uint4* out = (uint4*)f.out;
    for (int g = lo / WG_BM; g <= (hi - 1) / WG_BM; ++g) {
        if (threadIdx.x == 0) wait_row_counted(done, world, tiles_m, g, target);
        __syncthreads();
        const int r0 = max(g * WG_BM, lo) - lo, r1 = min(g * WG_BM + WG_BM, hi) - lo;
        const unsigned long long nv = (unsigned long long)(r1 - r0) * n / 8;
        const unsigned long long per = (nv + nblk - 1) / nblk;
        const unsigned long long at = (unsigned long long)r0 * n / 8 + c * per;
        const unsigned long long end = min(per, nv - min(nv, c * per));
        const unsigned long long step = (unsigned long long)blockDim.x * RS_UNROLL;
        for (unsigned long long x0 = threadIdx.x; x0 < end; x0 += step) {
            float acc[RS_UNROLL][8];
#pragma unroll
            for (int u = 0; u < RS_UNROLL; ++u) {
#pragma unroll
                for (int e = 0; e < 8; ++e) acc[u][e] = 0.0f;
            }
            for (int q = 0; q < world; ++q) {
                uint4 v[RS_UNROLL];
#pragma unroll
                for (int u = 0; u < RS_UNROLL; ++u) {
                    const unsigned long long x = x0 + (unsigned long long)u * blockDim.x;
                    if (x < end) v[u] = ld_cg(st + q * slot + at + x);
                }
#pragma unroll
                for (int u = 0; u < RS_UNROLL; ++u) {
                    const unsigned w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        float a, b;
                        unpack2(TT(), w[i], a, b);
                        acc[u][2 * i] += a;
                        acc[u][2 * i + 1] += b;
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < RS_UNROLL; ++u) {
                const unsigned long long x = x0 + (unsigned long long)u * blockDim.x;
                if (x >= end) continue;
                out[at + x] =
                    make_uint4(TT::pack(acc[u][0], acc[u][1]), TT::pack(acc[u][2], acc[u][3]),
                               TT::pack(acc[u][4], acc[u][5]), TT::pack(acc[u][6], acc[u][7]));
            }
        }
    }
}

// `fused-reduce:0`'s start, by the producer warpgroup's other three warps of every block once
// the block is set up (RsGate::start; its first warp goes on to the loads, the consumers to the
// products): this GPU's rows of the sum (or its f32 sum) zeroed, a share each; the last block to
// be done (by `zeroed`) announces the call's epoch in every GPU's flags, this GPU's own
// included, so that every GPU's tiles (this GPU's too) may be added into the rows from then on.
// In place of a memset and a ready word per peer written by the host on the stream before the
// launch (one operation each on the GPU's stream). With every thread in it before the block's
// set-up, the first loads waited for the fences: 1 us slower at M 16-64 on one H200 than the
// memset. By the consumers after the set-up, their first products waited for the zeroing and
// its fence and count: 1.1 us at 16 x 4096 x 1024, 4 us at 1024 x 4096 x 3584 (timed inside
// the launch on one H200: bench/results/phases-h200-2026-11-29/).
__device__ __forceinline__ void rs_zero_announce(const TpFusedRs& f, int world, unsigned epoch) {
    // Zeroed, and the ready words written, by the host; or zeroed two calls before.
    if (f.zero_bytes == 0 || f.prezeroed) return;
    const unsigned long long nv = f.zero_bytes / 16;  // whole vectors: n is a multiple of 8
    const unsigned threads = 96;                      // warps 1-3
    uint4* z = (uint4*)f.zero;
    for (unsigned long long x = (unsigned long long)blockIdx.x * threads + threadIdx.x - 32;
         x < nv; x += (unsigned long long)gridDim.x * threads) {
        z[x] = make_uint4(0, 0, 0, 0);
    }
    asm volatile("bar.sync 3, %0;" ::"r"(threads) : "memory");
    if (threadIdx.x == 32) {
        // On one GPU nothing outside it reads the zeros or the word: GPU scope.
        auto fence = [&] {
            if (world > 1) {
                __threadfence_system();
            } else {
                __threadfence();
            }
        };
        fence();
        if (atomicAdd((unsigned long long*)f.zeroed, 1ull) % gridDim.x == gridDim.x - 1) {
            fence();
            for (int q = 0; q < world; ++q) st_release_sys((unsigned*)f.announce[q], epoch);
        }
    }
}

// `fused-reduce:0:K` where the launch zeroed its f32 sum (zero_bytes > 0) or it was zeroed
// before (prezeroed): every block of the launch, all its threads, once every GPU's partials of
// one of this GPU's tile rows are counted, rounds its share of that tile row of the f32 sum into
// `out`, tile row by tile row, and (prezeroed) puts zeros back. In place of the launch of
// gemm_splitk_* after this one (its launch and its wait for every tile row at once); a sum by
// each tile's last partial was slower for the standalone k split (the whole tile's sum on one
// SM: gemm_tma.cu), so here every block takes a share of every tile row.
//
// Prezeroed, each GPU has two f32 sums and the calls take them in turn, so a call's sums were
// zeroed by the call before the last, here. A peer adds into this GPU's sum of call c only
// once it has begun call c, so once its call c - 1 has ended, which waited for this GPU's
// partials of call c - 1, which this GPU made after its call c - 2 ended: no peer adds into a
// sum before it is zeroed, or while it is being read, and the launch neither zeroes nor waits
// for a ready word. Zeroing in the launch, its first stores waited 0.5-3.3 us for the last
// block's count and ready word at M 16 on one H200 (bench/results/split-phases-h200-2026-11-29/).
//
// `fused-all` (every row this GPU's, its whole sum): its f32 sum has a plane per k range
// (`plane_rows` apart; and per source GPU, `source_rows`), added in order, then rounded; or,
// unsplit with a plane per source GPU, 16-bit planes, summed in f32 in rank order (`halves`).
template <typename TT>
__device__ __forceinline__ void rs_convert(const TpFusedRs& f, int rank, int world, int rows,
                                           int n, int tiles_m, unsigned target, int splits) {
    const unsigned* done = (const unsigned*)f.done[rank];
    // `fused-all`: every row (its f32 sum and `out` are the whole M x n).
    const int lo = f.all ? 0 : rank * rows, hi = f.all ? world * rows : lo + rows;
    const uint4* acc = (const uint4*)f.acc[rank];  // 4 f32 a vector
    uint2* out = (uint2*)f.out;                     // 4 halves
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    // `fused-all`'s 16-bit planes, one per source GPU (unsplit): summed in f32 in rank order.
    const bool halves = f.all && f.source_rows && splits == 1;
    for (int t = lo / WG_BM; t <= (hi - 1) / WG_BM; ++t) {
        if (threadIdx.x == 0) wait_row_counted(done, world, tiles_m, t, target);
        __syncthreads();
        // This tile row's rows of this GPU, in vectors of 4 (n is a multiple of 8).
        const unsigned long long v0 = (unsigned long long)(max(t * WG_BM, lo) - lo) * n / 4;
        const unsigned long long v1 = (unsigned long long)(min(t * WG_BM + WG_BM, hi) - lo) * n / 4;
        for (unsigned long long x = v0 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             x < v1 && halves; x += step) {
            const uint2* h = (const uint2*)f.acc[rank];
            const unsigned long long plane = f.plane_rows * n / 4;
            float a = 0.0f, b = 0.0f, c = 0.0f, e = 0.0f;
            for (int p = 0; p < world; ++p) {
                const uint2 w = ld_cg(h + p * plane + x);
                float w0, w1, w2, w3;
                unpack2(TT(), w.x, w0, w1);
                unpack2(TT(), w.y, w2, w3);
                a += w0;
                b += w1;
                c += w2;
                e += w3;
            }
            out[x] = make_uint2(TT::pack(a, b), TT::pack(c, e));
        }
        for (unsigned long long x = v0 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             x < v1 && !halves; x += step) {
            const uint4 v = ld_cg(acc + x);
            float a = __uint_as_float(v.x), b = __uint_as_float(v.y);
            float c = __uint_as_float(v.z), e = __uint_as_float(v.w);
            if (f.prezeroed) ((uint4*)acc)[x] = make_uint4(0, 0, 0, 0);
            if (f.all) {
                // The later planes (k ranges, of each source GPU in rank order), in order.
                const unsigned long long plane = f.plane_rows * n / 4;
                const int planes = f.source_rows ? world * splits : splits;
                for (int p = 1; p < planes; ++p) {
                    const uint4 w = ld_cg(acc + p * plane + x);
                    a += __uint_as_float(w.x);
                    b += __uint_as_float(w.y);
                    c += __uint_as_float(w.z);
                    e += __uint_as_float(w.w);
                    if (f.prezeroed) ((uint4*)acc)[p * plane + x] = make_uint4(0, 0, 0, 0);
                }
            }
            out[x] = make_uint2(TT::pack(a, b), TT::pack(c, e));
        }
    }
}

// The GEMM's tile order and epilogue in the fused reduce-scatter (see above). With ADD
// (`fused-reduce:0`) the half-tiles are added into the owner's rows of the sum instead (which the
// owner zeroes at the launch's start), by tensor-memory reductions, and there are no sums.
template <bool ADD>
struct RsGate {
    const TpFusedRs* f;
    const TensorMap* dst;
    int rank, world, rows, m, tiles_m;
    unsigned epoch;
    int pending, pending_chunks;  // the last unit's tile row (-1: none) and its chunks
    unsigned readied;             // peers whose ready word was seen this call
    __device__ __forceinline__ int tile(int t) const {
        if (rows % WG_BM == 0) {
            const int per = rows / WG_BM, i = t % world;
            return ((rank + 1 + i) % world) * per + t / world;
        }
        return t;
    }
    __device__ __forceinline__ bool may_wait() const { return false; }
    __device__ __forceinline__ void wait(int) {}
    // The producer warpgroup's other warps' start (ADD): this GPU's rows of the sum zeroed,
    // the ready words written.
    __device__ __forceinline__ void start() {
        if (ADD) rs_zero_announce(*f, world, epoch);
    }
    // The last unit's stores are complete: count its chunks in each owner's done words.
    __device__ __forceinline__ void flush() {
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
        asm volatile("fence.proxy.async.global;" ::: "memory");
        const int t0 = pending * WG_BM, t1 = min(t0 + WG_BM, m);
        // `fused-all`: every GPU holds every row.
        const int qa = f->all ? 0 : t0 / rows, qb = f->all ? world - 1 : (t1 - 1) / rows;
        for (int q = qa; q <= qb; ++q) {
            unsigned* w = (unsigned*)f->done[q] + rank * tiles_m + pending;
            // This GPU's own rows at GPU scope: their writes and the owner's wait are on it.
            if (q == rank) {
                asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(w),
                             "r"(pending_chunks)
                             : "memory");
            } else {
                asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(w),
                             "r"(pending_chunks)
                             : "memory");
            }
        }
    }
    // The owners of the warpgroup's rows from row0, ready for this call's stores (the lead
    // waits; the others wait for it at the barrier before they store). With ADD this GPU's own
    // word too where its rows are zeroed in the launch (rs_zero_announce; zero_bytes 0: by the
    // host before it).
    __device__ __forceinline__ int owners_ready(int row0, bool lead) {
        const int q0 = row0 / rows, q1 = (min(row0 + 64, m) - 1) / rows;
        if (f->prezeroed) return q0;  // nothing to wait for (rs_convert)
        bool fresh = false;
        // `fused-all`: every GPU's sum is added into.
        for (int q = f->all ? 0 : q0; q <= (f->all ? world - 1 : q1); ++q) {
            if ((q != rank || (ADD && f->zero_bytes != 0)) && !((readied >> q) & 1u)) {
                if (lead) wait_epoch((const unsigned*)f->ready + q, epoch);
                readied |= 1u << q;
                fresh = true;
            }
        }
        // The zeros were written through the generic proxy, the reductions add through the
        // async one.
        if (ADD && fresh && lead) asm volatile("fence.proxy.async.global;" ::: "memory");
        return q0;
    }
    // A split's partial (`fused-reduce:0:K`): added into the owners' f32 sums (which they
    // zero at the launch's start) by tensor-memory reductions through `dst` (maps of 32 x
    // 64 f32 boxes over each owner's sum) where each GPU's rows are whole 64-row halves, else
    // pair by pair (red.add.f32, fenced before the lead counts them, as below).
    template <int BN>
    __device__ __forceinline__ void store_split(const float* d, float*, u16* stage, int, int n,
                                                int row0, int col0, int split, int bar_id,
                                                int tile_m) {
        const bool lead = (threadIdx.x & 127) == 0;
        if (pending >= 0 && lead) flush();
        if (row0 < m) {
            const int q0 = owners_ready(row0, lead);
            if (f->all) {
                // `fused-all`: into its k range's plane (and source's) of every GPU's whole f32
                // sum, the next GPUs' first.
                const int at = rank * (int)f->source_rows + split * (int)f->plane_rows + row0;
                wg_add_tma_f32<BN>(d, stage, dst, at, col0, bar_id, world, rank + 1);
            } else if (rows % 64 == 0) {
                wg_add_tma_f32<BN>(d, stage, dst + q0, row0 - q0 * rows, col0, bar_id);
            } else {
                asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
                wg_pairs<BN>(d, m, n, row0, col0, [&](int r, int c, float x, float y) {
                    const int q = r / rows;
                    red_add2_f32((float*)f->acc[q] + (long long)(r - q * rows) * n + c, x, y);
                });
                __threadfence_system();
                asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
            }
        }
        pending = tile_m;
        pending_chunks = (min(BN, n - col0) + 63) / 64;
    }
    template <typename TT, int BN>
    __device__ __forceinline__ void store(const float* d, u16* stage, const TensorMap*,
                                          int row0, int col0, int bar_id, int tile_m, int n) {
        const bool lead = (threadIdx.x & 127) == 0;
        if (ADD && f->all && f->source_rows) {
            // `fused-all`'s plane per source, unsplit: the tile stored into this GPU's 16-bit
            // plane of every GPU's sum (a plain store), the next GPUs' first.
            if (pending >= 0 && lead) flush();
            if (row0 < m) {
                wg_store_tma<TT, BN, false>(d, stage, dst, rank * (int)f->source_rows + row0,
                                            col0, bar_id, world, rank + 1);
            }
            pending = tile_m;
            pending_chunks = (min(BN, n - col0) + 63) / 64;
            return;
        }
        if (pending >= 0 && lead) flush();
        if (row0 < m) {
            const int q0 = owners_ready(row0, lead);
            if (ADD && f->all) {
                // `fused-all`: into every GPU's whole sum, the next GPUs' first, this GPU's
                // last; each box filled once.
                wg_store_tma<TT, BN, ADD>(d, stage, dst, row0, col0, bar_id, world, rank + 1);
            } else if (rows % 64 == 0) {
                // One owner; its map clips at its last row.
                wg_store_tma<TT, BN, ADD>(d, stage, dst + q0, row0 - q0 * rows, col0, bar_id);
            } else {
                // Rows of several owners: pairs stored one by one (small M only), each thread's
                // fenced before the lead counts them (flush, after the barrier).
                asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
                wg_pairs<BN>(d, m, n, row0, col0, [&](int r, int c, float x, float y) {
                    const int q = r / rows;
                    u16* p = (u16*)f->slot[q] + (long long)(r - q * rows) * n + c;
                    if (ADD) {
                        red_add2(TT(), p, TT::pack(x, y));
                    } else {
                        *(unsigned*)p = TT::pack(x, y);
                    }
                });
                __threadfence_system();
                asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
            }
        }
        pending = tile_m;
        pending_chunks = (min(BN, n - col0) + 63) / 64;
    }
    // The unit just stored by the swapped GEMM (token tile from row tok0, the warpgroup's 64
    // columns from col0) pending its count: its 128-row tile row, and per 64 columns 2 / (the
    // token tiles in that tile row), so that a tile row's count per 64 columns is 2, as the two
    // 64-row halves of a 128-row tile make it (the owners' target is the same): 2 where one
    // token tile holds the tile row's rows (M <= MT, or a last tile row of at most MT rows), 1
    // for each of two 64-row token tiles. The host takes 32-row token tiles only at M <= 32.
    template <int MT>
    __device__ __forceinline__ void swap_pending(int tok0, int col0, int n) {
        pending = tok0 / WG_BM;
        const int in_row = (min(pending * WG_BM + WG_BM, m) - pending * WG_BM + MT - 1) / MT;
        pending_chunks = col0 < n ? 2 / in_row : 0;
    }
    // The swapped GEMM (gemm_tma_swap, `fused-reduce:0` at M <= 64, where every GPU's rows are
    // in one token tile, and beyond in 64-row token tiles where they fit in one wave: fused.rs):
    // the warpgroup's MT x 64 block of C, staged in `buf`, added
    // into the rows of its first row's owner by one tensor-memory reduction through `dst` (maps
    // of MT x 64 boxes over each owner's rows of the sum, clipped at the owner's last row), and
    // into the later owners' rows 16 bytes at a time (red.add.noftz.v4, from `buf`; fenced
    // before the lead counts them, as the pairs above). The first version stored the later
    // owners' rows by tensor-memory reductions too, at a negative row of their maps; between two
    // H200s it stopped with an illegal instruction: a tensor-memory store or reduction at a
    // negative coordinate is one, on one H200 too (a map clips past its end, never before its
    // start; bench/results/tma-negative-h200-2026-11-29/). Every box here starts at a row >= 0
    // of its map. This version ran between two H200s (fused.rs, in_launch). Counted as
    // swap_pending says.
    template <typename TT, int MT>
    __device__ __forceinline__ void store_swap(const float* d, u16* buf, const TensorMap*,
                                               int tok0, int col0, int bar_id, int tile_m,
                                               int n) {
        const bool lead = (threadIdx.x & 127) == 0;
        if (f->all && f->source_rows) {
            // `fused-all`'s plane per source, unsplit: the box stored into this GPU's 16-bit
            // plane of every GPU's sum (plain stores), the next GPUs' first.
            if (pending >= 0 && lead) flush();
            swap_box<TT, MT>(d, buf, bar_id);
            if (lead) {
                const int at = rank * (int)f->source_rows + tok0;
                for (int i = 1; i <= world; ++i) {
                    tma_issue_box<false>(dst + (rank + i) % world, col0, at, buf);
                }
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
            swap_pending<MT>(tok0, col0, n);
            return;
        }
        // Past the flush the box's last store has completed (read too).
        if (pending >= 0 && lead) flush();
        const int q0 = owners_ready(tok0, lead);
        swap_box<TT, MT>(d, buf, bar_id);
        if (f->all) {
            // `fused-all`: the box into every GPU's whole sum (maps of MT x 64 boxes over M x n),
            // the next GPUs' first; no later owners.
            if (lead) {
                for (int i = 1; i <= world; ++i) {
                    tma_issue_box<true>(dst + (rank + i) % world, col0, tok0, buf);
                }
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
            swap_pending<MT>(tok0, col0, n);
            return;
        }
        if (lead) tma_store_box<true>(dst + q0, col0, tok0 - q0 * rows, buf);
        // The later owners' rows of the box: r0 to r1 (of MT), 8 chunks of 16 bytes a row.
        const int r0 = (q0 + 1) * rows - tok0, r1 = min(MT, m - tok0);
        if (r0 < r1) {
            for (int x = threadIdx.x & 127; x < (r1 - r0) * 8; x += 128) {
                const int r = r0 + x / 8, c = x % 8, row = tok0 + r, q = row / rows;
                if (col0 + 8 * c >= n) continue;
                const uint4 v = *(const uint4*)(buf + r * 64 + ((c ^ (r & 7)) << 3));
                u16* p = (u16*)f->slot[q] + (long long)(row - q * rows) * n + col0 + 8 * c;
                red_add8(TT(), p, v);
            }
            __threadfence_system();
            asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
        }
        swap_pending<MT>(tok0, col0, n);
    }
    // A split's partial of the swapped GEMM (`fused-reduce:0:K`, as store_swap): added in f32
    // into its owners' f32 sums from `buf`, in two halves of 32 columns (MT x 32 f32: the box's
    // bytes). With `prezeroed` (fused.rs: on one and two GPUs, where it was checked) the halves
    // are 128-byte swizzled as the maps' boxes and each goes into its first row's owner by a
    // tensor-memory reduction through `dst` (maps of MT x 32 f32 boxes over each owner's sum,
    // clipped at the owner's last row), whose completion the lead waits for at the next unit's
    // store or the end (flush), before it counts it, as store_swap's, and only the later owners'
    // rows go 16 bytes at a time (red.add.v4.f32), fenced before the lead counts them;
    // otherwise every row goes so, fenced before the next products: on one H200 a split unit's
    // additions and fence took 2.2-2.8 us so (bench/results/split-phases-h200-2026-11-29/).
    // Counted as store_swap's. Staging both halves at once (a second box per warpgroup) was
    // 1.03-1.05x faster by split but `fused-reduce:0` 1% slower, 105 -> 125 registers: not kept
    // (bench/results/split-prezeroed-h200-2026-11-29/staged/).
    template <int MT>
    __device__ __forceinline__ void store_swap_split(const float* d, float*, u16* buf, int,
                                                     int n, int tok0, int col0, int split,
                                                     int bar_id, int /*tile_m*/) {
        const bool lead = (threadIdx.x & 127) == 0;
        // Past the flush the box's last reductions have completed (read too).
        if (pending >= 0 && lead) flush();
        const int q0 = owners_ready(tok0, lead);
        const bool tma = f->prezeroed != 0;
        float* fb = (float*)buf;
        // The rows added 16 bytes at a time (with `tma` the later owners'; `fused-all`, always
        // prezeroed: none): r0 to r1 (of MT), 8 chunks of 16 bytes a half row.
        const int r1 = min(MT, m - tok0);
        const int r0 = f->all ? r1 : tma ? (q0 + 1) * rows - tok0 : 0;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            // The box is free (the last half's reads are done: the lead waited for the
            // reduction's, every thread did its own); the warps holding columns 32 h to
            // 32 h + 31 (warps 2 h and 2 h + 1) write them.
            asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
            swap_each<MT>(d, [&](int tr, int cn, float x) {
                // Swizzled as the maps' boxes only for the tensor-memory unit.
                if ((cn >> 5) == h) {
                    fb[tr * 32 + ((((cn & 31) >> 2) ^ (tma ? tr & 7 : 0)) << 2) + (cn & 3)] = x;
                }
            });
            // The tensor-memory reduction reads shared memory through the async proxy.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
            if (tma && lead && f->all) {
                // `fused-all`: into its k range's plane of every GPU's whole f32 sum, the next
                // GPUs' first.
                const int at = rank * (int)f->source_rows + split * (int)f->plane_rows + tok0;
                for (int i = 1; i <= world; ++i) {
                    tma_issue_box<true>(dst + (rank + i) % world, col0 + 32 * h, at, fb);
                }
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            } else if (tma && lead) {
                tma_store_box<true>(dst + q0, col0 + 32 * h, tok0 - q0 * rows, fb);
            }
            for (int x = threadIdx.x & 127; x < max(r1 - r0, 0) * 8; x += 128) {
                const int r = r0 + x / 8, c = x % 8, row = tok0 + r, q = row / rows;
                if (col0 + 32 * h + 4 * c >= n) continue;
                const float4 v = *(const float4*)(fb + r * 32 + ((c ^ (tma ? r & 7 : 0)) << 2));
                float* p =
                    (float*)f->acc[q] + (long long)(row - q * rows) * n + col0 + 32 * h + 4 * c;
                asm volatile("red.relaxed.sys.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p),
                             "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                             : "memory");
            }
            if (tma && lead) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        }
        if (r0 < r1) {
            __threadfence_system();
            asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
        }
        swap_pending<MT>(tok0, col0, n);
    }
    __device__ __forceinline__ void finish() {
        if (pending >= 0 && (threadIdx.x & 127) == 0) flush();
    }
};

// SWAP = 1 (gemm_tma_rsa_swap_*, ADD only: M <= 64, or 64-row token tiles that fit in one
// wave): gemm_tma_swap with token tiles BN rows high, its blocks stored by RsGate's store_swap*
// (in the kernel's unit order: RsGate's tile row order, which only times the owners' tiles, is
// not used).
template <typename TT, int BN, bool ADD, int SWAP = 0>
__device__ __forceinline__ void gemm_tma_rs(int m, int n, int k, const TensorMap* tma,
                                            const TensorMap* tmb, const TpMaps& maps,
                                            const TpFusedRs& f, int rank, int world, int rows,
                                            int reduce_blocks, int splits, int kt_per,
                                            unsigned epoch, unsigned target) {
    // The summing blocks wait for the GEMM's, so roles go by ticket to blocks that are running;
    // with ADD no block waits for another's role (the final wait is for every block's counts),
    // and the ticket's round trip holds the producer's first loads back (on one H200, against
    // the same memset build in two runs, 1.034x / 1.037x with the ticket and 1.055x / 1.044x
    // without, at M <= 64 / >= 128). Where the host zeroed the sum (zero_bytes 0: on more than
    // two GPUs, fused.rs's in_launch) by ticket still, as before.
    const bool in_launch = ADD && (f.zero_bytes != 0 || f.prezeroed);
    const int r = in_launch ? (int)blockIdx.x : block_role(f.tickets);
    const int tiles_m = (m + WG_BM - 1) / WG_BM;
    if (r < reduce_blocks) {
        fused_reduce<TT>(f, r, reduce_blocks, rank, world, rows, n, tiles_m, target);
        return;
    }
    RsGate<ADD> g;
    g.f = &f;
    g.dst = maps.dst;
    g.rank = rank;
    g.world = world;
    g.rows = rows;
    g.m = m;
    g.tiles_m = tiles_m;
    g.epoch = epoch;
    g.pending = -1;
    g.pending_chunks = 0;
    g.readied = 0;
    // k split in `splits` ranges of kt_per steps only with ADD (the partials added in f32).
    if constexpr (SWAP) {
        gemm_tma_swap<TT, BN>(m, n, k, tma, tmb, &maps.dst[rank], splits, kt_per, nullptr,
                              r - reduce_blocks, gridDim.x - reduce_blocks, g);
    } else {
        gemm_tma<TT, BN>(m, n, k, tma, tmb, &maps.dst[rank], splits, kt_per, nullptr,
                         r - reduce_blocks, gridDim.x - reduce_blocks, g);
    }
    if (in_launch && (splits > 1 || (f.all && f.source_rows))) {
        // Every thread of every block is here (the producer warpgroup's too, its loads issued):
        // the launch ends with this GPU's rows of the sum rounded from the f32 sum.
        rs_convert<TT>(f, rank, world, rows, n, tiles_m, target, splits);
    } else if (ADD && r == 0 && threadIdx.x == 0) {
        // The launch ends once every GPU's tiles of this GPU's rows were added (and counted):
        // one block waits for it (the launch ends with its last block), the others exit.
        const unsigned* done = (const unsigned*)f.done[rank];
        // `fused-all`: every tile row is this GPU's.
        const int lo = f.all ? 0 : rank * rows, hi = f.all ? m : lo + rows;
        for (int t = lo / WG_BM; t <= (hi - 1) / WG_BM; ++t) {
            wait_row_counted(done, world, tiles_m, t, target);
        }
    }
}
#endif

#define TMA_RS_ARGS int m, int n, int k, const __grid_constant__ TensorMap tma, \
    const __grid_constant__ TensorMap tmb, const __grid_constant__ TpMaps maps, TpFusedRs f, \
    int rank, int world, int rows, int reduce_blocks, int splits, int kt_per, unsigned epoch, \
    unsigned target
#ifdef AUGUR_WGMMA
#define AUGUR_TMA_RS(T, TY, BN) \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_tma_rs_##TY##_##BN(TMA_RS_ARGS) { \
        gemm_tma_rs<T, BN, false>(m, n, k, &tma, &tmb, maps, f, rank, world, rows,               \
                                  reduce_blocks, 1, splits * kt_per, epoch, target);               \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_tma_rsa_##TY##_##BN(TMA_RS_ARGS) {  \
        gemm_tma_rs<T, BN, true>(m, n, k, &tma, &tmb, maps, f, rank, world, rows, 0, splits,      \
                                 kt_per, epoch, target);                                           \
    }
#else
#define AUGUR_TMA_RS(T, TY, BN)                                                 \
    extern "C" __global__ void gemm_tma_rs_##TY##_##BN(TMA_RS_ARGS) { __trap(); } \
    extern "C" __global__ void gemm_tma_rsa_##TY##_##BN(TMA_RS_ARGS) { __trap(); }
#endif
AUGUR_TMA_INSTANCES(AUGUR_TMA_RS)
#ifdef AUGUR_WGMMA
#define AUGUR_TMA_RSA_SWAP(T, TY, MT)                                                               \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_tma_rsa_swap_##TY##_##MT(TMA_RS_ARGS) { \
        gemm_tma_rs<T, MT, true, 1>(m, n, k, &tma, &tmb, maps, f, rank, world, rows, 0, splits,     \
                                    kt_per, epoch, target);                                         \
    }
#else
#define AUGUR_TMA_RSA_SWAP(T, TY, MT) \
    extern "C" __global__ void gemm_tma_rsa_swap_##TY##_##MT(TMA_RS_ARGS) { __trap(); }
#endif
AUGUR_TMA_SWAP_INSTANCES(AUGUR_TMA_RSA_SWAP)
