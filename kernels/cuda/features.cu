// SpMV feature gathering on the device: exact integer sums over the rows and entries of a CSR
// pattern (kernels::cuda::gather turns them into features with the same code as the CPU
// gatherer, so both give identical values). Grid-stride loops over a fixed grid keep the global
// atomics to one per block and quantity.

typedef unsigned long long u64;

#define XSEG 32          // columns per 128-byte segment of f32 x (X_SEGMENT_COLS)
#define COL_CHUNK 32     // entries per thread in feat_cols

// acc layout, shared with kernels::cuda::gather:
//  0 min_len  1 max_len  2 len2  3 len3 bits 0..31  4 len3 bits 32..63  5 len3 bits 64..
//  6 empty  7..12 hist  13 bandwidth  14 dist  15 segments
#define ACC_N 16

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

__device__ __forceinline__ int bucket(u64 len) {
    return len <= 2 ? 0 : len <= 8 ? 1 : len <= 32 ? 2 : len <= 128 ? 3 : len <= 1024 ? 4 : 5;
}

extern "C" __global__ void feat_rows(int rows, const int* __restrict__ ptr, u64* __restrict__ acc) {
    __shared__ u64 scratch[32];
    u64 mn = ~0ull, mx = 0, l2 = 0, l3a = 0, l3b = 0, l3c = 0, empty = 0;
    u64 h[6] = {0, 0, 0, 0, 0, 0};
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
        h[bucket(len)] += 1;
    }
    block_reduce(mn, 1, acc, 0, scratch);
    block_reduce(mx, 2, acc, 1, scratch);
    block_reduce(l2, 0, acc, 2, scratch);
    block_reduce(l3a, 0, acc, 3, scratch);
    block_reduce(l3b, 0, acc, 4, scratch);
    block_reduce(l3c, 0, acc, 5, scratch);
    block_reduce(empty, 0, acc, 6, scratch);
    for (int b = 0; b < 6; ++b) block_reduce(h[b], 0, acc, 7 + b, scratch);
}

extern "C" __global__ void feat_cols(int rows, int nnz, const int* __restrict__ ptr,
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

// Radix select of the k-th longest row: histogram of the 8 bits at `shift` of the lengths whose
// bits above `shift` equal `prefix` (under `mask`).
extern "C" __global__ void len_radix_hist(int rows, const int* __restrict__ ptr, unsigned prefix,
                                          unsigned mask, int shift, u64* __restrict__ hist) {
    __shared__ unsigned local[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
    __syncthreads();
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (long long)gridDim.x * blockDim.x) {
        unsigned len = (unsigned)(ptr[r + 1] - ptr[r]);
        if ((len & mask) == prefix) atomicAdd(&local[(len >> shift) & 255u], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        if (local[i]) atomicAdd(hist + i, (u64)local[i]);
}

// Count and sum of the lengths strictly above t.
extern "C" __global__ void len_sum_above(int rows, const int* __restrict__ ptr, unsigned t,
                                         u64* __restrict__ out) {
    __shared__ u64 scratch[32];
    u64 count = 0, sum = 0;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (long long)gridDim.x * blockDim.x) {
        unsigned len = (unsigned)(ptr[r + 1] - ptr[r]);
        if (len > t) { count += 1; sum += len; }
    }
    block_reduce(count, 0, out, 0, scratch);
    block_reduce(sum, 0, out, 1, scratch);
}
