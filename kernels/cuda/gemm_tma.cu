// The TMA GEMMs (issue 24; Hopper, sm_90a only; built for other architectures they trap):
// persistent kernels whose producer warpgroup loads tiles by tensor-memory copies for two wgmma
// consumer warpgroups, their swapped form for small M, and the sums of their k splits.
// kernels/src/cuda/module.rs appends this text to gemm.cu's (its types and wgmma helpers) and
// gemm_fused.cu's to this one: one module.

// ---- Hopper: TMA loads by a producer warpgroup, wgmma by two consumer warpgroups ------------
//
// gemm_tma_{f16,bf16}_{256,192,128}: 384 threads, persistent: the grid holds at most one block per
// SM and each block walks the work units blockIdx.x, blockIdx.x + gridDim.x, ... A unit is one 128
// x BN tile of C (BN = 256, 192 or 128) over one of `splits` equal ranges of k (`kt_per` steps of
// 64). Warpgroup 0 produces (one thread issues the tensor-memory copies of each stage's 128 x 64 A
// tile and BN x 64 B tile, 128-byte swizzled, straight into shared memory, and the stage's "full"
// barrier counts their bytes in); warpgroups 1 and 2 consume (each waits for a stage to be full,
// multiplies its 64 rows by the BN columns with four wgmma.m64nBNk16, and marks the stage it
// finished before "empty" for the producer). The stages run on across units, so the producer loads
// the next unit while the consumers store this one. With one split a unit's tile is rounded into C
// through shared memory and tensor-memory stores that run on while the consumers start the next
// unit (wg_store_tma); with more, each split's f32 partial tile goes to ws[split][m][n] and
// gemm_splitk_{f16,bf16} sums them into C (a sum inside the kernel by the tile's last split, found
// with per-tile arrival counters, was slower: it puts the tile's whole sum on one SM;
// bench/results/gemm-splitk-h100-2026-11-25/fixup-in-kernel*). The tensor maps come from the host
// (cuTensorMapEncodeTiled); past the matrix edges the copies fill zeros. With rows_per_flag > 0
// the producer waits for A's rows to arrive first (wait_rows: the producer/consumer overlap).

#define TMA_GROUP 8

struct __align__(64) TensorMap {
    unsigned long long opaque[16];
};

#ifdef AUGUR_WGMMA
__device__ __forceinline__ void mbar_init(unsigned bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, int parity) {
    unsigned ok = 0;
    while (!ok) {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(ok)
            : "r"(bar), "r"(parity)
            : "memory");
    }
}
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, int x, int y,
                                         unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
        "{%2, %3}], [%4];" ::"r"(dst),
        "l"((unsigned long long)map), "r"(x), "r"(y), "r"(bar)
        : "memory");
}

// One tensor-memory store of the staging box at `buf` to (row0, col0) of the matrix `tmc` maps
// (with ADD, added to what it holds: a reduction), not yet committed (tma_store_box commits it).
template <bool ADD>
__device__ __forceinline__ void tma_issue_box(const TensorMap* tmc, int col0, int row0,
                                              const void* buf) {
    if (ADD) {
        asm volatile(
            "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, "
            "{%1, %2}], [%3];" ::"l"((unsigned long long)tmc),
            "r"(col0), "r"(row0), "r"(smem_addr(buf))
            : "memory");
    } else {
        asm volatile(
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], "
            "[%3];" ::"l"((unsigned long long)tmc),
            "r"(col0), "r"(row0), "r"(smem_addr(buf))
            : "memory");
    }
}

// tma_issue_box committed as its own bulk group.
template <bool ADD>
__device__ __forceinline__ void tma_store_box(const TensorMap* tmc, int col0, int row0,
                                              const void* buf) {
    tma_issue_box<ADD>(tmc, col0, row0, buf);
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// The loop of the tensor-memory stores below: BOXES boxes of 64 rows x 128 bytes, each filled
// by the warpgroup (`fill(b, buf, r, t)`: this thread's rows r and r + 8 of the box, its lane's
// t = lane % 4) into one of its two staging buffers (8 KiB each,
// 128-byte swizzled like the tensor maps: a row's 16-byte chunk j lands at j ^ (row % 8), so a
// warp's stores hit 8 different bank groups), then stored (with ADD, added to what the
// destination holds: a tensor-memory reduction) by one thread at columns col0 + b x BOX_COLS
// with cp.async.bulk.tensor, which clips at the matrix edges. The stores run on while the
// warpgroup goes on to its next unit; a buffer is refilled only once the store from it two boxes
// before has read it (with an odd count of boxes, box 0 once every store has read its buffer:
// the last box of the call before used the same one), and the kernel waits for its stores at
// the end.
//
// With `copies` > 1 (`fused-all`: the same tile into every GPU's sum) each box, filled once, goes
// to `copies` maps, tmc + (first + i) % copies for i from 0, one bulk group a box.
template <int BOXES, int BOX_COLS, bool ADD, typename Fill>
__device__ __forceinline__ void wg_tma_boxes(u16* stage, const TensorMap* tmc, int row0, int col0,
                                             int bar_id, Fill fill, int copies = 1,
                                             int first = 0) {
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
    const int r = w * 16 + (lane >> 2), t = lane & 3;
    const bool lead = (threadIdx.x & 127) == 0;
#pragma unroll
    for (int b = 0; b < BOXES; ++b) {
        u16* buf = stage + (b & 1) * 64 * 64;
        // With an odd count of boxes, box 0's buffer is the last box's of the call before (the
        // unit before, or `fused-all`'s store of the same unit to another GPU): wait for all of
        // its reads. Otherwise the one two boxes back (this call's, or the last but one).
        if (lead && b == 0 && (BOXES & 1)) {
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        } else if (lead) {
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        }
        asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
        fill(b, buf, r, t);
        // The tensor-memory store reads shared memory through the async proxy.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
        if (lead) {
            for (int i = 0; i < copies; ++i) {
                tma_issue_box<ADD>(tmc + (first + i) % copies, col0 + b * BOX_COLS, row0, buf);
            }
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}

// A warpgroup's 64 x N accumulators into C (with ADD, added to what C holds, in the 16-bit type:
// fused-reduce:0, the owner's rows of the sum) in 64-column boxes, each rounded to TT
// (wg_tma_boxes). Register 4 q + e's pair (row r or r + 8, columns 8 j + 2 t of box c, q = 8 c +
// j) lies in 16-byte chunk j of its row, half 2 t in it.
template <typename TT, int N, bool ADD = false>
__device__ __forceinline__ void wg_store_tma(const float* d, u16* stage, const TensorMap* tmc,
                                             int row0, int col0, int bar_id, int copies = 1,
                                             int first = 0) {
    wg_tma_boxes<N / 64, 64, ADD>(stage, tmc, row0, col0, bar_id,
                                  [&](int c, u16* buf, int r, int t) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int q = c * 8 + j;
            *(unsigned*)(buf + r * 64 + ((j ^ (r & 7)) << 3) + 2 * t) =
                TT::pack(d[4 * q], d[4 * q + 1]);
            *(unsigned*)(buf + (r + 8) * 64 + ((j ^ (r & 7)) << 3) + 2 * t) =
                TT::pack(d[4 * q + 2], d[4 * q + 3]);
        }
    }, copies, first);
}

// A warpgroup's 64 x N f32 accumulators added into an f32 matrix (fused-reduce:0:K: the owner's
// f32 sum) by tensor-memory reductions through `tmc`, a map of 32 x 64 f32 boxes (128 bytes a
// row, swizzled alike): wg_tma_boxes with 32-column boxes, each staging buffer one 64 x 32 f32
// box. Register 4 q + e's pair (columns 8 j + 2 t of 64-column chunk c, q = 8 c + j) lies in box
// 2 c + j / 4 at column 8 (j % 4) + 2 t: 16-byte chunk 2 (j % 4) + t / 2 of its row, float
// 2 (t % 2) in it.
template <int N>
__device__ __forceinline__ void wg_add_tma_f32(const float* d, u16* stage, const TensorMap* tmc,
                                               int row0, int col0, int bar_id, int copies = 1,
                                               int first = 0) {
    wg_tma_boxes<N / 32, 32, true>(stage, tmc, row0, col0, bar_id,
                                   [&](int b, u16* half, int r, int t) {
        float* buf = (float*)half;
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const int q = (b >> 1) * 8 + (b & 1) * 4 + jj;
            const int ch = 2 * jj + (t >> 1);
            *(float2*)(buf + r * 32 + ((ch ^ (r & 7)) << 2) + 2 * (t & 1)) =
                make_float2(d[4 * q], d[4 * q + 1]);
            *(float2*)(buf + (r + 8) * 32 + ((ch ^ (r & 7)) << 2) + 2 * (t & 1)) =
                make_float2(d[4 * q + 2], d[4 * q + 3]);
        }
    }, copies, first);
}

// A warpgroup's 64 x N f32 accumulators at (row0, col0) into the row-major 64 x N f32 block at
// `W` (a tail-split tile's partial: gemm_tma_tail_*), the pairs inside the m x n matrix only.
template <int N>
__device__ __forceinline__ void wg_store_block_f32(const float* d, float* __restrict__ W, int m,
                                                   int n, int row0, int col0) {
    wg_pairs<N>(d, m, n, row0, col0, [&](int r, int c, float x, float y) {
        *(float2*)(W + (long long)(r - row0) * N + (c - col0)) = make_float2(x, y);
    });
}

// A warpgroup's 64 x N f32 accumulators into the row-major [m][n] f32 partial at `W`.
template <int N>
__device__ __forceinline__ void wg_store_f32(const float* d, float* __restrict__ W, int m, int n,
                                             int row0, int col0) {
    wg_pairs<N>(d, m, n, row0, col0, [&](int r, int c, float x, float y) {
        *(float2*)(W + (long long)r * n + c) = make_float2(x, y);
    });
}

// Work unit u: its tile (t in the schedule's order; its row and column of tiles, blocks grouped
// by TMA_GROUP tile rows, down the rows first: consecutive units share B tiles and a group's A
// rows, so both stay in L2), its split and its k steps [kt0, kt1). Tiles before `from` are whole
// (one unit each, every k step), the others cut in `splits` ranges of kt_per steps: from = 0
// splits every tile (as before the tail split), from = tiles_m x tiles_n - (the tiles of the
// last, part-filled wave) splits only those (gemm_tma's tail split).
struct Unit {
    int tile_m, tile_n, split, kt0, kt1, t;
};
__device__ __forceinline__ void tile_of(int t, int tiles_m, int tiles_n, int& tile_m,
                                        int& tile_n) {
    const int per_group = TMA_GROUP * tiles_n;
    const int first = t / per_group * TMA_GROUP;
    const int rows_here = min(tiles_m - first, TMA_GROUP);
    tile_m = first + (t % per_group) % rows_here;
    tile_n = (t % per_group) / rows_here;
}
// Unit u's k steps [kt0, kt1) alone (no tile: the consumers' cheap part before the products).
template <bool TAIL>
__device__ __forceinline__ void unit_steps(int u, int splits, int kt_per, int kt_all, int from,
                                           int& kt0, int& kt1) {
    if (TAIL && u < from) {
        kt0 = 0;
        kt1 = kt_all;
    } else {
        kt0 = (u - from) % splits * kt_per;
        kt1 = min(kt_all, kt0 + kt_per);
    }
}
// Without TAIL, `from` is 0 (every tile cut in `splits`, one when not split).
template <bool TAIL = false>
__device__ __forceinline__ Unit unit_of(int u, int tiles_m, int tiles_n, int splits, int kt_per,
                                        int kt_all, int from = 0) {
    Unit r;
    if (TAIL && u < from) {
        r.t = u;
        r.split = 0;
    } else {
        r.t = from + (u - from) / splits;
        r.split = (u - from) % splits;
    }
    unit_steps<TAIL>(u, splits, kt_per, kt_all, from, r.kt0, r.kt1);
    tile_of(r.t, tiles_m, tiles_n, r.tile_m, r.tile_n);
    return r;
}

// The gate of a producer/consumer overlap: A's rows arrive in blocks of `rows_per_flag`, and
// block b may be read once flags[b] is non-zero (set after its rows were written: by a copy
// engine's stream write, or a kernel's release store). The producer waits for every block that
// tile rows [row0, row0 + 128) touch and that it has not seen set yet (`seen`: every block
// below it was seen set, kept across units), then fences the generic proxy against the async
// one its tensor-memory copies read through: once per newly seen run of blocks, not per unit. A
// block that stays unset for GATE_TIMEOUT_NS traps: the launch fails instead of hanging.
#define GATE_TIMEOUT_NS 10000000000ull
__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void wait_rows(const unsigned* flags, int rows_per_flag, int row0, int m,
                                          int& seen) {
    const int last = (min(row0 + WG_BM, m) - 1) / rows_per_flag;
    if (last < seen) return;
    const int first = max(row0 / rows_per_flag, seen);
    for (int b = first; b <= last; ++b) {
        if (load_acquire(flags + b)) continue;
        const unsigned long long t0 = now_ns();
        while (!load_acquire(flags + b)) {
            __nanosleep(256);
            if (now_ns() - t0 > GATE_TIMEOUT_NS) __trap();
        }
    }
    asm volatile("fence.proxy.async.global;" ::: "memory");
    // Blocks below `first` that this unit did not touch may still be unset: only a run that
    // starts at `seen` extends it.
    if (first == seen) seen = last + 1;
}

// The swapped kernel's (gemm_tma_swap, below) accumulators: a consumer warpgroup's 64 x MT
// block of Cᵀ, register 4 j + e at Cᵀ's row (column of C) 16 wq + g (+ 8 for e >= 2) and its
// column (row of C) 8 j + 2 t + e % 2 (wq: the warp in the warpgroup, g, t: lane / 4, lane % 4).
// swap_each gives each value with its row and column of C in the block (tr < MT, cn < 64).
template <int MT, typename Put>
__device__ __forceinline__ void swap_each(const float* d, Put put) {
    const int lane = threadIdx.x & 31, wq = (threadIdx.x >> 5) & 3;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < MT / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            put(8 * j + 2 * t + (e & 1), 16 * wq + g + (e >> 1) * 8, d[4 * j + e]);
        }
    }
}

// The block rounded to TT into an MT x 64 box of C in shared memory (128-byte rows, swizzled as
// the tensor maps' boxes).
template <typename TT, int MT>
__device__ __forceinline__ void swap_stage(const float* d, u16* buf) {
    swap_each<MT>(d, [&](int tr, int cn, float x) {
        buf[tr * 64 + (((cn >> 3) ^ (tr & 7)) << 3) + (cn & 7)] =
            (u16)(TT::pack(x, 0.0f) & 0xFFFF);
    });
}

// The block staged in `buf` for the tensor-memory unit, between the warpgroup's barriers
// (`bar_id`): every thread's values written (swap_stage), then fenced for the async proxy. The
// caller makes sure nothing still reads `buf` before.
template <typename TT, int MT>
__device__ __forceinline__ void swap_box(const float* d, u16* buf, int bar_id) {
    asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
    swap_stage<TT, MT>(d, buf);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
}

// The stores of gemm_tma (store, store_split) and gemm_tma_swap (store_swap, store_swap_split)
// into this GPU's C, and its f32 partials with k split: the standalone kernels' and the fused
// all-gather's (gemm_fused.cu).
struct PlainStores {
    template <typename TT, int BN>
    __device__ __forceinline__ void store(const float* d, u16* stage, const TensorMap* tmc,
                                          int row0, int col0, int bar_id, int, int) {
        wg_store_tma<TT, BN>(d, stage, tmc, row0, col0, bar_id);
    }
    // A split's partial (k split in `splits` ranges): into its plane of the f32 workspace.
    template <int BN>
    __device__ __forceinline__ void store_split(const float* d, float* ws, u16*, int m, int n,
                                                int row0, int col0, int split, int, int) {
        wg_store_f32<BN>(d, ws + (long long)split * m * n, m, n, row0, col0);
    }
    // The swapped kernel's block into C at (tok0, col0) by one tensor-memory store through
    // `tmc` (MT x 64 boxes; clipped at the edges), from the warpgroup's staging box `buf`.
    template <typename TT, int MT>
    __device__ __forceinline__ void store_swap(const float* d, u16* buf, const TensorMap* tmc,
                                               int tok0, int col0, int bar_id, int, int) {
        const bool wg_lead = (threadIdx.x & 127) == 0;
        // The store from this box one unit before must have read it.
        if (wg_lead) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        swap_box<TT, MT>(d, buf, bar_id);
        if (wg_lead) tma_store_box<false>(tmc, col0, tok0, buf);
    }
    // A split's block: each value inside M x N into its plane of the f32 workspace.
    template <int MT>
    __device__ __forceinline__ void store_swap_split(const float* d, float* ws, u16*, int m,
                                                     int n, int tok0, int col0, int split, int,
                                                     int) {
        float* W = ws + (long long)split * m * n;
        swap_each<MT>(d, [&](int tr, int cn, float x) {
            const int r = tok0 + tr, c = col0 + cn;
            if (r < m && c < n) W[(long long)r * n + c] = x;
        });
    }
    // The producer warpgroup's other three warps (96 threads), once the block is set up, while
    // its first warp loads and the consumers multiply (gemm_fused.cu's reduce-scatter zeroes its
    // rows of the sum there).
    __device__ __forceinline__ void start() {}
    __device__ __forceinline__ void finish() {}
};

// The plain row gate of `arrive` (and no gate when rows_per_flag is 0): tiles in the order the
// schedule gives them.
struct RowGate : PlainStores {
    const unsigned* flags;
    int rows_per_flag, m, seen;
    __device__ __forceinline__ int tile(int t) const { return t; }
    __device__ __forceinline__ bool may_wait() const { return rows_per_flag > 0; }
    __device__ __forceinline__ void wait(int row0) {
        if (rows_per_flag > 0) wait_rows(flags, rows_per_flag, row0, m, seen);
    }
};

// The TMA kernels' shared memory at `raw`: STAGES "full" barriers (one arrival, the producer's,
// with the stage's bytes) and STAGES "empty" ones (lane 0 of each of the 8 consumer warps), set
// up by thread 0 before the block's barrier; then the stages, 1024-byte aligned (returned).
template <int STAGES>
__device__ __forceinline__ u16* tma_smem_init(unsigned char* raw) {
    unsigned long long* bars = (unsigned long long*)raw;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_addr(bars + s), 1);
            mbar_init(smem_addr(bars + STAGES + s), 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    unsigned char* base = raw + 2 * STAGES * 8;
    return (u16*)(base + ((1024 - (smem_addr(base) & 1023)) & 1023));
}

// A consumer warpgroup's k steps [kt0, kt1) of one unit into d (zeroed first; N / 2 floats): for
// each step, wait for its stage to be full, multiply the stage's 64 rows at `a_off` by its N rows
// at `b_off` (halves from the stage's start), and give the stage before back (its products are
// done; this one's stay in flight); then wait for the last products and give the unit's last
// stage back before the store, so that the next unit's loads overlap it. `it` counts the stages
// used over the block's units; the stages' "full" barriers are bars[0, STAGES), "empty" ones
// bars[STAGES, 2 STAGES).
template <typename TT, int N, int STAGES>
__device__ __forceinline__ void wg_consume(float* d, const u16* smem, int stage, int a_off,
                                           int b_off, unsigned long long* bars, int kt0, int kt1,
                                           int& it, bool lead) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
    for (int kt = kt0; kt < kt1; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(smem_addr(bars + s), (it / STAGES) & 1);
        const u16* st = smem + s * stage;
        wg_step<TT, N>(d, st + a_off, st + b_off);
        if (kt > kt0 && lead) mbar_arrive(smem_addr(bars + STAGES + (it - 1) % STAGES));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if (kt1 > kt0 && lead) mbar_arrive(smem_addr(bars + STAGES + (it - 1) % STAGES));
}

// The persistent TMA GEMM over the work units vblock, vblock + nblocks, ... (blockIdx.x and
// gridDim.x, but for the fused kernel below, whose other blocks copy). `gate.tile` maps the
// schedule's tile rows to the matrix's (both producer and consumers call it; it must not
// change), `gate.wait(row0)` holds the producer until the tile's rows are there. Without TAIL
// every tile is cut in `splits` ranges (each partial through gate.store_split); with TAIL (the
// tail split, gemm_tma_tail_*: the standalone kernel's RowGate only) the tiles from split_from
// on in the schedule's order are cut, the others whole, and a cut tile's partials go to
// ws[split][tile - split_from][128][BN], which gemm_tail_sum_* sums. The tail split is an
// instance of its own: built into the whole-tile kernel it left that kernel 2-3% slower at K 1024
// on an H200, with fewer unit computations as well (bench/results/tail-split-h200-2026-11-29,
// recheck/); apart, the whole-tile kernels' code is what it was before.
template <typename TT, int BN, bool TAIL = false, typename Gate>
__device__ __forceinline__ void gemm_tma(int m, int n, int k, const TensorMap* tma,
                                         const TensorMap* tmb, const TensorMap* tmc, int splits,
                                         int kt_per, float* __restrict__ ws, int vblock,
                                         int nblocks, Gate gate, int split_from = 0) {
    extern __shared__ __align__(16) unsigned char tma_raw[];
    // Barriers first (2 x WG_STAGES x 8 bytes), then 1024-byte aligned stages.
    unsigned long long* bars = (unsigned long long*)tma_raw;
    u16* smem = tma_smem_init<WG_STAGES>(tma_raw);
    const int A_TILE = WG_BM * 64, STAGE = (WG_BM + BN) * 64;  // halves
    // After the stages: each consumer warpgroup's two 64 x 64 staging buffers of C.
    u16* cstage = smem + WG_STAGES * STAGE;
    const int wg = threadIdx.x >> 7;
    const int tiles_m = (m + WG_BM - 1) / WG_BM, tiles_n = (n + BN - 1) / BN;
    const int from = TAIL ? max(0, min(split_from, tiles_m * tiles_n)) : 0;
    const int units = from + (tiles_m * tiles_n - from) * splits;
    const int kt_all = (k + WG_BK - 1) / WG_BK;
    auto full = [&](int s) { return smem_addr(bars + s); };
    auto empty = [&](int s) { return smem_addr(bars + WG_STAGES + s); };
    if (wg == 0) {
        if (threadIdx.x == 0) {
            const int bytes = STAGE * 2;
            int it = 0;  // stages used so far, over all of this block's units
            for (int u = vblock; u < units; u += nblocks) {
                Unit w = unit_of<TAIL>(u, tiles_m, tiles_n, splits, kt_per, kt_all, from);
                w.tile_m = gate.tile(w.tile_m);
                gate.wait(w.tile_m * WG_BM);
                for (int kt = w.kt0; kt < w.kt1; ++kt, ++it) {
                    int s = it % WG_STAGES, use = it / WG_STAGES;
                    if (use > 0) mbar_wait(empty(s), (use - 1) & 1);
                    mbar_expect_tx(full(s), bytes);
                    u16* st = smem + s * STAGE;
                    tma_load(smem_addr(st), tma, kt * WG_BK, w.tile_m * WG_BM, full(s));
                    tma_load(smem_addr(st + A_TILE), tmb, kt * WG_BK, w.tile_n * BN, full(s));
                }
            }
        } else if (threadIdx.x >= 32) {
            gate.start();
        }
        return;
    }
    const int cw = wg - 1;  // consumer warpgroup: rows 64 cw .. 64 cw + 63 of the tile
    const bool lead = (threadIdx.x & 31) == 0;
    float d[BN / 2];
    int it = 0;
    for (int u = vblock; u < units; u += nblocks) {
        Unit w;
        if constexpr (TAIL) {
            // The unit's k steps, then, after its products, its tile: nothing more is held
            // over the loop, and the 256-wide kernel stays under 160 registers (168 with the
            // tile held over it). At 168 x 384 threads an SM has no registers left for a kernel
            // beside it: `overlap arrive`'s row copies (device-to-device copies, which run as
            // kernels) never started, and its gate timed out (measured on an H200).
            int kt0, kt1;
            unit_steps<TAIL>(u, splits, kt_per, kt_all, from, kt0, kt1);
            wg_consume<TT, BN, WG_STAGES>(d, smem, STAGE, cw * 64 * 64, A_TILE, bars, kt0, kt1,
                                          it, lead);
            w = unit_of<TAIL>(u, tiles_m, tiles_n, splits, kt_per, kt_all, from);
            w.tile_m = gate.tile(w.tile_m);
        } else {
            w = unit_of(u, tiles_m, tiles_n, splits, kt_per, kt_all);
            w.tile_m = gate.tile(w.tile_m);
            wg_consume<TT, BN, WG_STAGES>(d, smem, STAGE, cw * 64 * 64, A_TILE, bars, w.kt0,
                                          w.kt1, it, lead);
        }
        const int row0 = w.tile_m * WG_BM + cw * 64, col0 = w.tile_n * BN;
        if (splits == 1 || (TAIL && w.t < from)) {
            gate.template store<TT, BN>(d, cstage + cw * 2 * 64 * 64, tmc, row0, col0, 1 + cw,
                                        w.tile_m, n);
        } else if constexpr (TAIL) {
            const long long block =
                ((long long)w.split * (tiles_m * tiles_n - from) + (w.t - from)) * WG_BM + cw * 64;
            wg_store_block_f32<BN>(d, ws + block * BN, m, n, row0, col0);
        } else {
            gate.template store_split<BN>(d, ws, cstage + cw * 2 * 64 * 64, m, n, row0, col0,
                                          w.split, 1 + cw, w.tile_m);
        }
    }
    gate.finish();
    // Shared memory must outlive the stores that read it.
    if (lead && (threadIdx.x & 127) == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// ---- Hopper, small M: the TMA kernel with the operands swapped ---------------------------
//
// gemm_tma_swap_{f16,bf16}_{32,64}: at decode-sized M (tens of tokens) gemm_tma's 128-row tiles
// multiply mostly rows past M, and its products, not DRAM, bound how fast an SM streams the
// weight (at M 32 it moves B at 2.85 TB/s against cuBLASLt's 3.9; cuBLASLt's kernel there,
// nvjet_sm90_tst_128x32, swaps A and B: bench/results/small-m-gemm-h200-2026-11-29). Here the
// weight is wgmma's A operand and the tokens its B: a work unit is 128 columns of C (n, B's
// rows: 64 per consumer warpgroup, wgmma's M) by MT rows of C (m, A's rows: wgmma's N = MT)
// over one of `splits` ranges of k, so each stage holds a 128 x 64 tile of B and an MT x 64
// tile of A (20 or 24 KiB: SWAP_STAGES of them in flight), and the products cover at most MT - 1
// rows past M. The accumulators are Cᵀ's: unsplit, a warpgroup writes its 64 x MT block
// transposed into an MT x 64 staging box and stores it with one tensor-memory store (clipped
// at the edges); split, each value goes to its partial ws[split][m][n], summed by
// gemm_splitk_{f16,bf16} as for gemm_tma. The units are vblock, vblock + nblocks, ... (as for
// gemm_tma). The weight does not wait for a gate that may hold it (`gate.may_wait()`): the
// producer loads B's tiles of its first unit's first steps (up to SWAP_STAGES) before it waits
// for A's rows, then their A tiles. The
// gate's `wait(row0)` holds it for 128 rows from row0, more than MT: correct; its tile order is
// not used, so a gate whose tile order matters takes M <= MT (one token tile; the fused
// reduce-scatter's order only times its owners' tiles and it takes larger M).
#ifndef SWAP_STAGES
#error "SWAP_STAGES comes from the host as -DSWAP_STAGES=... (kernels/src/cuda/gemm/mod.rs; kernels/src/cuda/module.rs)"
#endif
template <typename TT, int MT, typename Gate>
__device__ __forceinline__ void gemm_tma_swap(int m, int n, int k, const TensorMap* tma,
                                              const TensorMap* tmb, const TensorMap* tmc,
                                              int splits, int kt_per, float* __restrict__ ws,
                                              int vblock, int nblocks, Gate gate) {
    extern __shared__ __align__(16) unsigned char tma_raw[];
    unsigned long long* bars = (unsigned long long*)tma_raw;
    u16* smem = tma_smem_init<SWAP_STAGES>(tma_raw);
    const int B_TILE = 128 * 64, STAGE = (128 + MT) * 64;  // halves
    // After the stages: each consumer warpgroup's MT x 64 staging box of C.
    u16* cstage = smem + SWAP_STAGES * STAGE;
    const int wg = threadIdx.x >> 7;
    const int tiles_m = (m + MT - 1) / MT, tiles_n = (n + 127) / 128;
    const int units = tiles_m * tiles_n * splits;
    const int kt_all = (k + WG_BK - 1) / WG_BK;
    auto full = [&](int s) { return smem_addr(bars + s); };
    auto empty = [&](int s) { return smem_addr(bars + SWAP_STAGES + s); };
    // Unit u: split u % splits of tile t = u / splits, the token tiles of a column of B next to
    // each other (they share its B tile in L2).
    auto unit = [&](int u) {
        Unit r;
        const int t = u / splits;
        r.split = u % splits;
        r.tile_m = t % tiles_m;
        r.tile_n = t / tiles_m;
        r.kt0 = r.split * kt_per;
        r.kt1 = min(kt_all, r.kt0 + kt_per);
        return r;
    };
    if (wg == 0) {
        if (threadIdx.x == 0) {
            const int bytes = STAGE * 2;
            int it = 0;
            for (int u = vblock; u < units; u += nblocks) {
                const Unit w = unit(u);
                // Behind a gate that may hold it, the block's first unit: B of its first steps
                // (every stage is free), the gate, then their A. Otherwise in turn, the gate
                // first: B ahead costs the first stage its A's wait behind the B tiles (0.5-1 us
                // at M 16 on an H200 with no gate), and at a later unit it would wait for stages
                // still in use before the unit's first A.
                const int ahead =
                    u == vblock && gate.may_wait() ? min(w.kt1 - w.kt0, SWAP_STAGES) : 0;
                for (int a = 0; a < ahead; ++a) {
                    const int s = (it + a) % SWAP_STAGES, use = (it + a) / SWAP_STAGES;
                    if (use > 0) mbar_wait(empty(s), (use - 1) & 1);
                    mbar_expect_tx(full(s), bytes);
                    tma_load(smem_addr(smem + s * STAGE), tmb, (w.kt0 + a) * WG_BK,
                             w.tile_n * 128, full(s));
                }
                gate.wait(w.tile_m * MT);
                for (int kt = w.kt0; kt < w.kt1; ++kt, ++it) {
                    const int s = it % SWAP_STAGES;
                    u16* st = smem + s * STAGE;
                    if (kt - w.kt0 >= ahead) {
                        const int use = it / SWAP_STAGES;
                        if (use > 0) mbar_wait(empty(s), (use - 1) & 1);
                        mbar_expect_tx(full(s), bytes);
                        tma_load(smem_addr(st), tmb, kt * WG_BK, w.tile_n * 128, full(s));
                    }
                    tma_load(smem_addr(st + B_TILE), tma, kt * WG_BK, w.tile_m * MT, full(s));
                }
            }
        } else if (threadIdx.x >= 32) {
            gate.start();
        }
        return;
    }
    const int cw = wg - 1;  // consumer warpgroup: columns 64 cw .. 64 cw + 63 of the unit
    const bool lead = (threadIdx.x & 31) == 0, wg_lead = (threadIdx.x & 127) == 0;
    u16* buf = cstage + cw * MT * 64;
    float d[MT / 2];
    int it = 0;
    for (int u = vblock; u < units; u += nblocks) {
        const Unit w = unit(u);
        wg_consume<TT, MT, SWAP_STAGES>(d, smem, STAGE, cw * 64 * 64, B_TILE, bars, w.kt0, w.kt1,
                                        it, lead);
        const int tok0 = w.tile_m * MT, col0 = w.tile_n * 128 + cw * 64;
        if (splits == 1) {
            gate.template store_swap<TT, MT>(d, buf, tmc, tok0, col0, 1 + cw, w.tile_m, n);
        } else {
            gate.template store_swap_split<MT>(d, ws, buf, m, n, tok0, col0, w.split, 1 + cw,
                                               w.tile_m);
        }
    }
    gate.finish();
    if (wg_lead) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
#endif

#define TMA_ARGS_BASE int m, int n, int k, const __grid_constant__ TensorMap tma, \
    const __grid_constant__ TensorMap tmb, const __grid_constant__ TensorMap tmc, int splits, \
    int kt_per, float* __restrict__ ws
#define TMA_ARGS TMA_ARGS_BASE, const unsigned* __restrict__ flags, int rows_per_flag
#ifdef AUGUR_WGMMA
// gemm_tma_tail_*: the tail split (split_from: the first cut tile in the schedule's order).
#define AUGUR_TMA(T, TY, BN) \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_tma_##TY##_##BN(TMA_ARGS) { \
        gemm_tma<T, BN>(m, n, k, &tma, &tmb, &tmc, splits, kt_per, ws, blockIdx.x, gridDim.x, \
                        RowGate{{}, flags, rows_per_flag, m, 0});                                  \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(384, 1)                                      \
        gemm_tma_tail_##TY##_##BN(TMA_ARGS, int split_from) {                                 \
        gemm_tma<T, BN, true>(m, n, k, &tma, &tmb, &tmc, splits, kt_per, ws, blockIdx.x,      \
                              gridDim.x, RowGate{{}, flags, rows_per_flag, m, 0}, split_from);    \
    }
#else
#define AUGUR_TMA(T, TY, BN)                                                  \
    extern "C" __global__ void gemm_tma_##TY##_##BN(TMA_ARGS) { __trap(); } \
    extern "C" __global__ void gemm_tma_tail_##TY##_##BN(TMA_ARGS, int split_from) { __trap(); }
#endif
// The TMA kernels' six instances: each 16-bit type, tiles 256, 192 and 128 wide (the host's
// TMA_WIDTHS, kernels/src/cuda/gemm/kernels.rs).
#define AUGUR_TMA_INSTANCES(K) \
    K(F16, f16, 256) K(BF16, bf16, 256) K(F16, f16, 192) K(BF16, bf16, 192) K(F16, f16, 128) \
    K(BF16, bf16, 128)
AUGUR_TMA_INSTANCES(AUGUR_TMA)

#ifdef AUGUR_WGMMA
#define AUGUR_TMA_SWAP(T, TY, MT) \
    extern "C" __global__ void __launch_bounds__(384, 1) gemm_tma_swap_##TY##_##MT(TMA_ARGS) { \
        gemm_tma_swap<T, MT>(m, n, k, &tma, &tmb, &tmc, splits, kt_per, ws, blockIdx.x,         \
                             gridDim.x, RowGate{{}, flags, rows_per_flag, m, 0});                   \
    }
#else
#define AUGUR_TMA_SWAP(T, TY, MT) \
    extern "C" __global__ void gemm_tma_swap_##TY##_##MT(TMA_ARGS) { __trap(); }
#endif
// The swapped kernels' four instances: each 16-bit type, token tiles of 32 and 64 rows (the
// host's SWAP_TILES, kernels/src/cuda/gemm/kernels.rs).
#define AUGUR_TMA_SWAP_INSTANCES(K) \
    K(F16, f16, 32) K(BF16, bf16, 32) K(F16, f16, 64) K(BF16, bf16, 64)
AUGUR_TMA_SWAP_INSTANCES(AUGUR_TMA_SWAP)

// C = the sum of the `splits` f32 partials ws[s][m][n], rounded to TT: four columns per thread
// (n % 8 == 0).
template <typename TT>
__device__ __forceinline__ void splitk_sum(int m, int n, int splits, const float* __restrict__ ws,
                                           u16* __restrict__ C) {
    const long long total = (long long)m * n / 4;
    const long long plane = (long long)m * n;
    for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < total;
         q += (long long)gridDim.x * blockDim.x) {
        float4 acc = ((const float4*)ws)[q];
        for (int s = 1; s < splits; ++s) {
            float4 v = ((const float4*)(ws + s * plane))[q];
            acc.x += v.x;
            acc.y += v.y;
            acc.z += v.z;
            acc.w += v.w;
        }
        uint2 out = make_uint2(TT::pack(acc.x, acc.y), TT::pack(acc.z, acc.w));
        ((uint2*)C)[q] = out;
    }
}
extern "C" __global__ void gemm_splitk_f16(int m, int n, int splits, const float* __restrict__ ws,
                                           u16* __restrict__ C) {
    splitk_sum<F16>(m, n, splits, ws, C);
}
extern "C" __global__ void gemm_splitk_bf16(int m, int n, int splits, const float* __restrict__ ws,
                                            u16* __restrict__ C) {
    splitk_sum<BF16>(m, n, splits, ws, C);
}

// The tail split's sum (gemm_tma_tail_*): C's elements of the tiles from `from` on in the
// schedule's order (128 x bn tiles, tiles_m x tiles_n of them) = the sum of their `splits`
// partials ws[split][tile - from][128][bn], rounded to TT: four columns per thread (n % 8 == 0 and
// bn % 64 == 0, so four columns are wholly inside or outside C). Hopper only, as the TMA kernels.
#define TAIL_SUM_ARGS int m, int n, int bn, int tiles_m, int tiles_n, int from, int splits, \
    const float* __restrict__ ws, u16* __restrict__ C
#ifdef AUGUR_WGMMA
template <typename TT>
__device__ __forceinline__ void tail_sum(int m, int n, int bn, int tiles_m, int tiles_n, int from,
                                         int splits, const float* __restrict__ ws,
                                         u16* __restrict__ C) {
    const long long per_tile = (long long)WG_BM * bn / 4;  // float4s
    const long long total = (long long)(tiles_m * tiles_n - from) * per_tile;
    for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < total;
         q += (long long)gridDim.x * blockDim.x) {
        const int j = (int)(q / per_tile), e = (int)(q % per_tile);
        int tile_m, tile_n;
        tile_of(from + j, tiles_m, tiles_n, tile_m, tile_n);
        const int row = tile_m * WG_BM + e / (bn / 4), col = tile_n * bn + (e % (bn / 4)) * 4;
        if (row >= m || col >= n) continue;
        float4 acc = ((const float4*)ws)[q];
        for (int s = 1; s < splits; ++s) {
            float4 v = ((const float4*)ws)[s * total + q];
            acc.x += v.x;
            acc.y += v.y;
            acc.z += v.z;
            acc.w += v.w;
        }
        *(uint2*)(C + (long long)row * n + col) =
            make_uint2(TT::pack(acc.x, acc.y), TT::pack(acc.z, acc.w));
    }
}
extern "C" __global__ void gemm_tail_sum_f16(TAIL_SUM_ARGS) {
    tail_sum<F16>(m, n, bn, tiles_m, tiles_n, from, splits, ws, C);
}
extern "C" __global__ void gemm_tail_sum_bf16(TAIL_SUM_ARGS) {
    tail_sum<BF16>(m, n, bn, tiles_m, tiles_n, from, splits, ws, C);
}
#else
extern "C" __global__ void gemm_tail_sum_f16(TAIL_SUM_ARGS) { __trap(); }
extern "C" __global__ void gemm_tail_sum_bf16(TAIL_SUM_ARGS) { __trap(); }
#endif
