// SpMV feature gathering on the device: exact integer sums over the rows and entries of a CSR
// pattern (kernels::cuda::gather turns them into features with the same code as the CPU
// gatherer, so both give identical values), in two launches and no set-up: eight launches cost
// 80 us at any size on an H100 host (issue 18). feat_rows reads the row pointers (length
// statistics, one exact bin per length below LONG, the long rows listed apart; its last block
// finds the k longest rows and numbers the long rows' pieces); feat_cols reads the column
// indices (L lanes per short row; the long rows' entries split in pieces of LONG over the grid,
// so one row of 10^6 entries does not stall one group) and its last block writes the results and
// leaves every counter zeroed for the next gather. Grid-stride loops over a fixed grid keep the
// global atomics to one per block and quantity.

typedef unsigned long long u64;

// XSEG: columns per 128-byte segment of f32 x.
#ifndef XSEG
#error "XSEG comes from the host as -DXSEG=... (augur_features::spmv::X_SEGMENT_COLS; kernels/src/cuda/module.rs)"
#endif
#ifndef LONG
#error "LONG comes from the host as -DLONG=... (kernels/src/cuda/gather.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef BINS
#error "BINS comes from the host as -DBINS=... (kernels/src/cuda/gather.rs; kernels/src/cuda/module.rs)"
#endif

// acc layout (u64):
//  results, read back by kernels::cuda::gather:
//  0 min_len  1 max_len  2 len2  3 len3 bits 0..31  4 len3 bits 32..63  5 len3 bits 64..
//  6 empty  7..12 hist  13 bandwidth  14 dist  15 segments  16 top-1% entries
//  accumulators, zero between gathers (min_len's accumulator starts at ~0):
//  17..33 the accumulators of slots 0..16 (17 is min_len)  34 long rows  35 their entries
//  36 blocks finished  37 pieces of the long rows
#define OUT_N 17
#define ACC 17
#define N_LONG 34
#define SUM_LONG 35
#define DONE 36
#define PIECES 37
#define ACC_N 38

// Once, when the buffers are allocated: every accumulator zero, min_len's at ~0.
extern "C" __global__ void feat_init(u64* __restrict__ acc, unsigned* __restrict__ bins) {
    for (int i = threadIdx.x; i < BINS; i += blockDim.x) {
        bins[i] = 0;
        if (i < ACC_N) acc[i] = i == ACC ? ~0ull : 0ull;
    }
}

// True in every thread of the last block of the grid to get here (after this block's global
// writes and atomics are visible to it); that block then finishes the step.
__device__ __forceinline__ bool last_block(u64* acc) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(acc + DONE, 1ull) == (u64)gridDim.x - 1;
    __syncthreads();
    if (last) __threadfence();
    return last;
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += WARP_SHFL_DOWN(0xffffffffu, v, o, 32);
    return v;
}
__device__ __forceinline__ u64 warp_min(u64 v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) { u64 w = WARP_SHFL_DOWN(0xffffffffu, v, o, 32); v = w < v ? w : v; }
    return v;
}
__device__ __forceinline__ u64 warp_max(u64 v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) { u64 w = WARP_SHFL_DOWN(0xffffffffu, v, o, 32); v = w > v ? w : v; }
    return v;
}

// Block-wide sum of one value per thread, in every thread (blocks of 256). `scratch`: 8 words.
__device__ __forceinline__ u64 block_sum(u64 v, u64* scratch) {
    v = warp_sum(v);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    u64 t = 0;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += scratch[w];
    __syncthreads();
    return t;
}

// Inclusive prefix sum over the block (blocks of 256), in every thread. `scratch`: 8 words.
__device__ __forceinline__ u64 block_scan(u64 v, u64* scratch) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
        u64 w = WARP_SHFL_UP(0xffffffffu, v, o, 32);
        if (lane >= o) v += w;
    }
    __syncthreads();
    if (lane == 31) scratch[warp] = v;
    __syncthreads();
    for (int w = 0; w < warp; ++w) v += scratch[w];
    __syncthreads();
    return v;
}

// Reduce N quantities over the block at once (op per quantity: 0 sum, 1 min, 2 max) into
// acc[slot[q]]: shuffles within each warp, one exchange through shared memory, then thread q
// combines quantity q over the warps and issues its one atomic. One barrier pair for all N
// (N reductions one by one cost 2N). Blocks of 256 threads; `sh` holds 8 * N words.
template <int N>
__device__ __forceinline__ void block_reduce_n(u64 (&v)[N], const int (&op)[N],
                                               const int (&slot)[N], u64* acc, u64* sh) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
#pragma unroll
    for (int q = 0; q < N; ++q) {
        v[q] = op[q] == 0 ? warp_sum(v[q]) : (op[q] == 1 ? warp_min(v[q]) : warp_max(v[q]));
        if (lane == 0) sh[warp * N + q] = v[q];
    }
    __syncthreads();
    if ((int)threadIdx.x < N) {
        int q = threadIdx.x;
        int o = 0;
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (i == q) o = op[i];
        u64 r = sh[q];
        for (int w = 1; w < nwarps; ++w) {
            u64 x = sh[w * N + q];
            r = o == 0 ? r + x : (o == 1 ? (x < r ? x : r) : (x > r ? x : r));
        }
        int at = 0;
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (i == q) at = slot[i];
        if (o == 0) atomicAdd(acc + at, r);
        else if (o == 1) atomicMin(acc + at, r);
        else atomicMax(acc + at, r);
    }
    __syncthreads();
}

// Long rows are listed as (row << 32) | length.
__device__ __forceinline__ unsigned long_length(u64 e) { return (unsigned)(e & 0xffffffffu); }

// The entries of the k longest rows (ties of the k-th length counted up to k), in the last
// block of feat_rows, from the exact bins below LONG and the list of long rows. `sh`: BINS words.
__device__ u64 top_k_entries(u64 k, const unsigned* __restrict__ bins,
                             const u64* __restrict__ longs, u64 n_long, u64 sum_long,
                             u64 max_len, unsigned* sh, u64* scratch) {
    __shared__ unsigned s_digit, s_t;
    __shared__ u64 s_want;
    if (k <= n_long) {
        // Radix select of the k-th largest length among the long rows, 8 bits a pass.
        unsigned prefix = 0, mask = 0;
        u64 want = k;
        for (int shift = 24; shift >= 0; shift -= 8) {
            for (int i = threadIdx.x; i < 256; i += blockDim.x) sh[i] = 0;
            __syncthreads();
            for (u64 i = threadIdx.x; i < n_long; i += blockDim.x) {
                unsigned len = long_length(ld_coherent(longs + i));
                if ((len & mask) == prefix) atomicAdd(&sh[(len >> shift) & 255u], 1u);
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                unsigned digit = 0;
                for (int d = 255; d >= 0; --d) {
                    if (sh[d] >= want) { digit = (unsigned)d; break; }
                    want -= sh[d];
                }
                s_digit = digit;
                s_want = want;
            }
            __syncthreads();
            prefix |= s_digit << shift;
            mask |= 255u << shift;
            want = s_want;
            __syncthreads();
        }
        u64 above = 0, count = 0;
        for (u64 i = threadIdx.x; i < n_long; i += blockDim.x) {
            unsigned len = long_length(ld_coherent(longs + i));
            if (len > prefix) { above += len; count += 1; }
        }
        above = block_sum(above, scratch);
        count = block_sum(count, scratch);
        return above + (k - count) * (u64)prefix;
    }
    // The k-th longest row is shorter than LONG: every long row is in, and the rest come from the
    // bins, longest first; only bins up to the longest short row can be non-zero. Thread t owns
    // the `per` bins below hi = top + 1 - per * t.
    int top = max_len < BINS ? (int)max_len : BINS - 1;
    for (int i = threadIdx.x; i <= top; i += blockDim.x) sh[i] = ld_coherent(bins + i);
    __syncthreads();
    u64 want = k - n_long;
    const int per = (top + 256) / 256;
    int hi = top + 1 - per * (int)threadIdx.x;  // exclusive; <= 0 for threads past the bins
    if (hi < 0) hi = 0;
    int lo = hi - per > 0 ? hi - per : 0;
    u64 mine = 0;
    for (int b = lo; b < hi; ++b) mine += sh[b];
    u64 incl = block_scan(mine, scratch);
    u64 before = incl - mine;
    if (before < want && want <= incl) {
        u64 left = want - before;
        for (int b = hi - 1; b >= lo; --b) {
            if ((u64)sh[b] >= left) { s_t = (unsigned)b; s_want = left; break; }
            left -= sh[b];
        }
    }
    __syncthreads();
    unsigned t = s_t;
    u64 rest = s_want;
    u64 part = 0;
    for (int b = lo; b < hi; ++b)
        if ((unsigned)b > t) part += (u64)sh[b] * (u64)b;
    return sum_long + block_sum(part, scratch) + rest * (u64)t;
}

// Row statistics, one row per thread. Rows of LONG entries or more are listed in `longs`; the
// last block works out the top-1% entries and numbers the long rows' pieces of LONG entries
// (`first_piece`, an exclusive prefix over the list) for feat_cols.
extern "C" __global__ void __launch_bounds__(256)
feat_rows(int rows, const int* __restrict__ ptr, u64* __restrict__ acc,
          unsigned* __restrict__ bins, u64* __restrict__ longs,
          u64* __restrict__ first_piece, u64 k) {
    __shared__ unsigned sh[BINS];
    __shared__ u64 scratch[32];
    __shared__ u64 reduce_sh[8 * 14];
    __shared__ unsigned block_top;
    if (threadIdx.x == 0) block_top = 0;
    for (int i = threadIdx.x; i < BINS; i += blockDim.x) sh[i] = 0;
    __syncthreads();
    u64 mn = ~0ull, mx = 0, l2 = 0, l3a = 0, l3b = 0, l3c = 0, empty = 0;
    u64 h0 = 0, h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0, sum_long = 0;
    unsigned top_short = 0;  // this thread's longest row below LONG
    long long stride = (long long)gridDim.x * blockDim.x;
    // Every thread runs the same number of iterations, so the warp-wide vote below sees full
    // warps (rows past the end count as no row).
    long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long span = ((long long)rows + stride - 1) / stride * stride;
    for (long long r = first; r < span; r += stride) {
        bool row = r < rows;
        u64 len = row ? (u64)(ptr[r + 1] - ptr[r]) : 0;
        if (row) {
            mn = len < mn ? len : mn;
            mx = len > mx ? len : mx;
            u64 sq = len * len;
            u64 lo = sq * len, hi = __umul64hi(sq, len);
            l2 += sq;
            l3a += lo & 0xffffffffull;
            l3b += lo >> 32;
            l3c += hi;
            empty += len == 0;
            // The row-length histogram buckets (<= 2, 8, 32, 128, 1024, more) as six registers.
            h0 += len <= 2;
            h1 += len > 2 && len <= 8;
            h2 += len > 8 && len <= 32;
            h3 += len > 32 && len <= 128;
            h4 += len > 128 && len <= 1024;
            h5 += len > 1024;
        }
        // One exact bin per short length: rows of a warp mostly share a length, so one shared
        // atomic per distinct length and warp.
        bool binned = row && len < LONG;
        unsigned active = warp_ballot(0xffffffffu, binned);
        if (binned) {
            unsigned same = warp_match_any(active, (unsigned)len);
            if ((threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(&sh[len], __popc(same));
            top_short = (unsigned)len > top_short ? (unsigned)len : top_short;
        } else if (row) {
            sum_long += len;
            longs[atomicAdd(acc + N_LONG, 1ull)] = ((u64)r << 32) | len;
        }
    }
    // Flush the bins up to this block's longest short row (the rest are zero).
    top_short = warp_reduce_max(0xffffffffu, top_short);
    if ((threadIdx.x & 31) == 0) atomicMax(&block_top, top_short);
    __syncthreads();
    for (int i = threadIdx.x; i <= (int)block_top; i += blockDim.x)
        if (sh[i]) atomicAdd(bins + i, sh[i]);
    {
        u64 v[14] = {mn, mx, l2, l3a, l3b, l3c, empty, h0, h1, h2, h3, h4, h5, sum_long};
        const int op[14] = {1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        const int slot[14] = {ACC + 0, ACC + 1,  ACC + 2,  ACC + 3,  ACC + 4,  ACC + 5, ACC + 6,
                              ACC + 7, ACC + 8,  ACC + 9,  ACC + 10, ACC + 11, ACC + 12, SUM_LONG};
        block_reduce_n<14>(v, op, slot, acc, reduce_sh);
    }
    if (!last_block(acc)) return;
    u64 n_long = ld_coherent(acc + N_LONG);
    u64 top = top_k_entries(k, bins, longs, n_long, ld_coherent(acc + SUM_LONG),
                            ld_coherent(acc + ACC + 1), sh, scratch);
    // Number the long rows' pieces, 256 rows at a time.
    u64 carry = 0;
    for (u64 base = 0; base < n_long; base += blockDim.x) {
        u64 i = base + threadIdx.x;
        u64 pieces = i < n_long ? (long_length(ld_coherent(longs + i)) + LONG - 1) / LONG : 0;
        u64 incl = block_scan(pieces, scratch);
        if (i < n_long) first_piece[i] = carry + incl - pieces;
        __syncthreads();
        if (threadIdx.x == blockDim.x - 1) scratch[8] = incl;
        __syncthreads();
        carry += scratch[8];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        acc[ACC + 16] = top;
        acc[PIECES] = carry;
        __threadfence();
        acc[DONE] = 0;
    }
}

// Column statistics (bandwidth, distance to the diagonal, x segments) with L lanes per short row
// (coalesced over its entries), rows in grid-stride order; then the long rows' pieces, one per
// warp. The last block writes the results and zeroes every counter, the bins and the list.
template <int L>
__device__ __forceinline__ void feat_cols(int rows, const int* __restrict__ ptr,
                                          const int* __restrict__ idx, u64* __restrict__ acc,
                                          unsigned* __restrict__ bins,
                                          const u64* __restrict__ longs,
                                          const u64* __restrict__ first_piece) {
    __shared__ u64 scratch[32];
    u64 bw = 0, dist = 0, segs = 0;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long groups = (long long)gridDim.x * blockDim.x / L;
    int lane = (int)(t % L);
    for (long long r = t / L; r < rows; r += groups) {
        int start = ptr[r], end = ptr[r + 1];
        if (end - start >= LONG) continue;
        for (int e = start + lane; e < end; e += L) {
            int col = idx[e];
            u64 d = (u64)(col > r ? col - r : r - col);
            bw = d > bw ? d : bw;
            dist += d;
            segs += e == start || idx[e - 1] / XSEG != col / XSEG;
        }
    }
    u64 n_long = ld_coherent(acc + N_LONG), pieces = ld_coherent(acc + PIECES);
    int wlane = threadIdx.x & 31;
    long long warps = (long long)gridDim.x * blockDim.x / 32;
    for (long long p = t / 32; p < (long long)pieces; p += warps) {
        // The long row holding piece p: the last list entry whose first piece is <= p.
        u64 lo = 0, hi = n_long - 1;
        while (lo < hi) {
            u64 mid = (lo + hi + 1) >> 1;
            if (ld_coherent(first_piece + mid) <= (u64)p) lo = mid; else hi = mid - 1;
        }
        u64 e = ld_coherent(longs + lo);
        int row = (int)(e >> 32);
        int start = ptr[row], end = ptr[row + 1];
        long long q = p - (long long)ld_coherent(first_piece + lo);
        int e0 = start + (int)(q * LONG);
        int e1 = e0 + LONG < end ? e0 + LONG : end;
        for (int k = e0 + wlane; k < e1; k += 32) {
            int col = idx[k];
            u64 d = (u64)(col > row ? col - row : row - col);
            bw = d > bw ? d : bw;
            dist += d;
            segs += k == start || idx[k - 1] / XSEG != col / XSEG;
        }
    }
    {
        u64 v[3] = {bw, dist, segs};
        const int op[3] = {2, 0, 0};
        const int slot[3] = {ACC + 13, ACC + 14, ACC + 15};
        block_reduce_n<3>(v, op, slot, acc, scratch);
    }
    if (!last_block(acc)) return;
    // Results out; every accumulator, the bins and the list count back to zero.
    if (threadIdx.x < OUT_N) acc[threadIdx.x] = ld_coherent(acc + ACC + threadIdx.x);
    for (int i = threadIdx.x; i < BINS; i += blockDim.x) bins[i] = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        acc[ACC] = ~0ull;
        for (int i = ACC + 1; i < ACC_N; ++i)
            if (i != DONE) acc[i] = 0;
        __threadfence();
        acc[DONE] = 0;
    }
}

#define AUGUR_COLS(L) \
    extern "C" __global__ void __launch_bounds__(256) feat_cols##L( \
        int rows, const int* __restrict__ ptr, const int* __restrict__ idx, \
        u64* __restrict__ acc, unsigned* __restrict__ bins, const u64* __restrict__ longs, \
        const u64* __restrict__ first_piece) { \
        feat_cols<L>(rows, ptr, idx, acc, bins, longs, first_piece); \
    }
AUGUR_COLS(1)
AUGUR_COLS(2)
AUGUR_COLS(4)
AUGUR_COLS(8)
AUGUR_COLS(16)
AUGUR_COLS(32)
