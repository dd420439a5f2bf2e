// SpMV feature gathering on the device: exact integer sums over the rows and entries of a CSR
// pattern (kernels::cuda::gather turns them into features with the same code as the CPU
// gatherer, so both give identical values). Grid-stride loops over a fixed grid keep the global
// atomics to one per block and quantity.

typedef unsigned long long u64;

#define XSEG 32          // columns per 128-byte segment of f32 x (X_SEGMENT_COLS)

// acc layout, shared with kernels::cuda::gather:
//  0 min_len  1 max_len  2 len2  3 len3 bits 0..31  4 len3 bits 32..63  5 len3 bits 64..
//  6 empty  7..12 hist  13 bandwidth  14 dist  15 segments  16 top-1% entries
//  17 radix prefix  18 radix mask  19 rows still wanted (k at the start)  20 count above  21 sum above
//  22 blocks finished (the last block of a grid-wide step finishes the step, then resets it)
#define ACC_N 23
#define DONE 22

// Set acc and the radix histogram up for one gather (replaces a host-to-device copy).
extern "C" __global__ void feat_init(u64* __restrict__ acc, u64* __restrict__ hist, u64 k) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        hist[i] = 0;
        if (i < ACC_N) acc[i] = i == 0 ? ~0ull : (i == 19 ? k : 0ull);
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
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ u64 warp_min(u64 v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) { u64 w = __shfl_down_sync(0xffffffffu, v, o); v = w < v ? w : v; }
    return v;
}
__device__ __forceinline__ u64 warp_max(u64 v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) { u64 w = __shfl_down_sync(0xffffffffu, v, o); v = w > v ? w : v; }
    return v;
}

// Reduce `v` over the block into slot `slot` of acc with `op` (0 sum, 1 min, 2 max).
__device__ __forceinline__ void block_reduce(u64 v, int op, u64* acc, int slot, u64* scratch) {
    v = op == 0 ? warp_sum(v) : (op == 1 ? warp_min(v) : warp_max(v));
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        u64 init = op == 1 ? ~0ull : 0ull;
        v = lane < nwarps ? scratch[lane] : init;
        v = op == 0 ? warp_sum(v) : (op == 1 ? warp_min(v) : warp_max(v));
        if (lane == 0) {
            if (op == 0) atomicAdd(acc + slot, v);
            else if (op == 1) atomicMin(acc + slot, v);
            else atomicMax(acc + slot, v);
        }
    }
}


extern "C" __global__ void feat_rows(int rows, const int* __restrict__ ptr, u64* __restrict__ acc) {
    __shared__ u64 scratch[32];
    u64 mn = ~0ull, mx = 0, l2 = 0, l3a = 0, l3b = 0, l3c = 0, empty = 0;
    u64 h0 = 0, h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (long long)gridDim.x * blockDim.x) {
        u64 len = (u64)(ptr[r + 1] - ptr[r]);
        mn = len < mn ? len : mn;
        mx = len > mx ? len : mx;
        u64 sq = len * len;
        u64 lo = sq * len, hi = __umul64hi(sq, len);
        l2 += sq;
        l3a += lo & 0xffffffffull;
        l3b += lo >> 32;
        l3c += hi;
        empty += len == 0;
        // The row-length histogram buckets (<= 2, 8, 32, 128, 1024, more) as six registers (an indexed local array would spill).
        h0 += len <= 2;
        h1 += len > 2 && len <= 8;
        h2 += len > 8 && len <= 32;
        h3 += len > 32 && len <= 128;
        h4 += len > 128 && len <= 1024;
        h5 += len > 1024;
    }
    block_reduce(mn, 1, acc, 0, scratch);
    block_reduce(mx, 2, acc, 1, scratch);
    block_reduce(l2, 0, acc, 2, scratch);
    block_reduce(l3a, 0, acc, 3, scratch);
    block_reduce(l3b, 0, acc, 4, scratch);
    block_reduce(l3c, 0, acc, 5, scratch);
    block_reduce(empty, 0, acc, 6, scratch);
    block_reduce(h0, 0, acc, 7, scratch);
    block_reduce(h1, 0, acc, 8, scratch);
    block_reduce(h2, 0, acc, 9, scratch);
    block_reduce(h3, 0, acc, 10, scratch);
    block_reduce(h4, 0, acc, 11, scratch);
    block_reduce(h5, 0, acc, 12, scratch);
}

// Column statistics balanced by entries: each thread takes COL_CHUNK consecutive entries (after a
// binary search for their first row). For matrices with very long rows.
#define COL_CHUNK 32

__device__ __forceinline__ void feat_cols_chunked(int rows, int nnz, const int* __restrict__ ptr,
                                                  const int* __restrict__ idx, u64* __restrict__ acc) {
    __shared__ u64 scratch[32];
    u64 bw = 0, dist = 0, segs = 0;
    long long chunks = ((long long)nnz + COL_CHUNK - 1) / COL_CHUNK;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < chunks;
         c += (long long)gridDim.x * blockDim.x) {
        int k0 = (int)(c * COL_CHUNK);
        int k1 = k0 + COL_CHUNK < nnz ? k0 + COL_CHUNK : nnz;
        // The row holding entry k0: the last row whose start is <= k0 and that is not empty.
        int lo = 0, hi = rows - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >> 1;
            if (ptr[mid] <= k0) lo = mid; else hi = mid - 1;
        }
        int row = lo, end = ptr[row + 1];
        while (k0 >= end) end = ptr[++row + 1];
        int prev_seg = k0 > ptr[row] ? idx[k0 - 1] / XSEG : -1;
        for (int k = k0; k < k1; ++k) {
            while (k >= end) { end = ptr[++row + 1]; prev_seg = -1; }
            int col = idx[k];
            u64 d = (u64)(col > row ? col - row : row - col);
            bw = d > bw ? d : bw;
            dist += d;
            int seg = col / XSEG;
            segs += seg != prev_seg;
            prev_seg = seg;
        }
    }
    block_reduce(bw, 2, acc, 13, scratch);
    block_reduce(dist, 0, acc, 14, scratch);
    block_reduce(segs, 0, acc, 15, scratch);
}

// Column statistics with L lanes per row (coalesced over a row's entries), rows in grid-stride
// order. An entry starts a new x segment when it is its row's first or its segment differs from
// the previous entry's (columns are sorted within a row).
template <int L>
__device__ __forceinline__ void feat_cols_lanes(int rows, const int* __restrict__ ptr,
                                                const int* __restrict__ idx, u64* __restrict__ acc) {
    __shared__ u64 scratch[32];
    u64 bw = 0, dist = 0, segs = 0;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long groups = (long long)gridDim.x * blockDim.x / L;
    int lane = (int)(t % L);
    for (long long r = t / L; r < rows; r += groups) {
        int start = ptr[r], end = ptr[r + 1];
        for (int k = start + lane; k < end; k += L) {
            int col = idx[k];
            u64 d = (u64)(col > r ? col - r : r - col);
            bw = d > bw ? d : bw;
            dist += d;
            segs += k == start || idx[k - 1] / XSEG != col / XSEG;
        }
    }
    block_reduce(bw, 2, acc, 13, scratch);
    block_reduce(dist, 0, acc, 14, scratch);
    block_reduce(segs, 0, acc, 15, scratch);
}

// Column statistics: balanced by entries when a few rows are very long (the longest over 1024
// entries and 16x the mean), else L lanes per row. The longest row is read from acc, where
// feat_rows left it, so no host round trip decides between the two.
#define AUGUR_COLS(L) \
    extern "C" __global__ void feat_cols##L(int rows, int nnz, const int* __restrict__ ptr, \
                                           const int* __restrict__ idx, u64* __restrict__ acc) { \
        u64 max_len = acc[1]; \
        if (max_len > 1024 && (double)max_len * rows > 16.0 * (double)nnz) \
            feat_cols_chunked(rows, nnz, ptr, idx, acc); \
        else \
            feat_cols_lanes<L>(rows, ptr, idx, acc); \
    }
AUGUR_COLS(1)
AUGUR_COLS(2)
AUGUR_COLS(4)
AUGUR_COLS(8)
AUGUR_COLS(16)
AUGUR_COLS(32)

// Radix select of the k-th longest row on the device, 8 bits a pass: each pass counts the lengths
// that match the prefix found so far by their next 8 bits; the last block to finish picks the digit
// holding the k-th largest, narrows the prefix and clears the histogram. A pass above the longest
// row's highest bit has nothing to count (every digit is 0, which the pick then keeps).
extern "C" __global__ void len_radix_step(int rows, const int* __restrict__ ptr,
                                          u64* __restrict__ acc, int shift,
                                          u64* __restrict__ hist) {
    __shared__ unsigned local[256];
    unsigned prefix = (unsigned)acc[17], mask = (unsigned)acc[18];
    bool skip = shift > 0 && (acc[1] >> shift) == 0;
    if (!skip) {
        for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
        __syncthreads();
        for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
             r += (long long)gridDim.x * blockDim.x) {
            unsigned len = (unsigned)(ptr[r + 1] - ptr[r]);
            // Lengths in a warp mostly share a digit: one shared atomic per distinct digit and warp.
            bool match = (len & mask) == prefix;
            unsigned active = __ballot_sync(__activemask(), match);
            if (match) {
                unsigned digit = (len >> shift) & 255u;
                unsigned same = __match_any_sync(active, digit);
                if ((threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(&local[digit], __popc(same));
            }
        }
        __syncthreads();
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            if (local[i]) atomicAdd(hist + i, (u64)local[i]);
    }
    if (!last_block(acc)) return;
    __shared__ u64 bins[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) bins[i] = __ldcg(hist + i);
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 want = acc[19];
        unsigned digit = 0;
        for (int d = 255; d >= 0; --d) {
            if (bins[d] >= want) { digit = (unsigned)d; break; }
            want -= bins[d];
        }
        acc[17] |= (u64)digit << shift;
        acc[18] |= (u64)255u << shift;
        acc[19] = want;
        acc[DONE] = 0;
    }
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
}

// Count and sum of the lengths above the k-th largest (acc[17] after the four passes); the last
// block then sets the entries in the k longest rows: those above, plus ties of the k-th up to k.
extern "C" __global__ void len_sum_above(int rows, const int* __restrict__ ptr,
                                         u64* __restrict__ acc, u64 k) {
    __shared__ u64 scratch[32];
    unsigned t = (unsigned)acc[17];
    u64 count = 0, sum = 0;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (long long)gridDim.x * blockDim.x) {
        unsigned len = (unsigned)(ptr[r + 1] - ptr[r]);
        if (len > t) { count += 1; sum += len; }
    }
    block_reduce(count, 0, acc, 20, scratch);
    block_reduce(sum, 0, acc, 21, scratch);
    if (!last_block(acc)) return;
    if (threadIdx.x == 0) {
        acc[16] = __ldcg(acc + 21) + (k - __ldcg(acc + 20)) * (u64)t;
        acc[DONE] = 0;
    }
}
