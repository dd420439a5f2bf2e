// CSR SpMV kernels, y = A x, with i32 row pointers and column indices.
// Compiled at run time by NVRTC or hiprtc (kernels::cuda::module, after portable.h: warp
// operations through its helpers, never a vendor intrinsic); every entry point is extern "C" and
// instantiated for float (_f32) and double (_f64). Adding a kernel: a template here, its
// instantiations at the bottom, and one entry in kernels::cuda::GpuKernel.

template <typename T>
__device__ __forceinline__ T load_x(const T* __restrict__ x, int j) {
    return __ldg(x + j);
}

// One thread per row.
template <typename T>
__device__ __forceinline__ void spmv_scalar(int rows, const int* __restrict__ ptr,
                                            const int* __restrict__ idx,
                                            const T* __restrict__ val,
                                            const T* __restrict__ x, T* __restrict__ y) {
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    T sum = 0;
    for (int k = ptr[r], end = ptr[r + 1]; k < end; ++k) sum += val[k] * load_x(x, idx[k]);
    y[r] = sum;
}

// Row r with L consecutive lanes of a warp (lane = this thread's place among them), shuffle
// reduction; lane 0 writes y[r]. A group of L lanes is either wholly active or wholly returned, so
// its own mask is exact. The loop is left to the compiler: unrolled as adaptive's group_sum is,
// vector4-32 ran 3-10% slower on an H200 (bench/results/vector-unroll-h200-2026-11-29/).
template <typename T, int L>
__device__ __forceinline__ void lanes_row(int r, int lane, const int* __restrict__ ptr,
                                          const int* __restrict__ idx, const T* __restrict__ val,
                                          const T* __restrict__ x, T* __restrict__ y) {
    unsigned group = (L == 32) ? 0xffffffffu : (((1u << L) - 1u) << ((threadIdx.x & 31) / L * L));
    T sum = 0;
    for (int k = ptr[r] + lane, end = ptr[r + 1]; k < end; k += L) sum += val[k] * load_x(x, idx[k]);
#pragma unroll
    for (int o = L / 2; o > 0; o /= 2) sum += WARP_SHFL_DOWN(group, sum, o, L);
    if (lane == 0) y[r] = sum;
}

// L consecutive lanes of a warp per row (L = 2, 4, 8, 16, 32).
template <typename T, int L>
__device__ __forceinline__ void spmv_vector(int rows, const int* __restrict__ ptr,
                                            const int* __restrict__ idx,
                                            const T* __restrict__ val,
                                            const T* __restrict__ x, T* __restrict__ y) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long r = t / L;
    if (r >= rows) return;
    lanes_row<T, L>((int)r, (int)(t % L), ptr, idx, val, x, y);
}

// Sum over a block (blockDim.x a multiple of 32, at most 1024); the total is valid in thread 0.
template <typename T>
__device__ __forceinline__ T block_sum(T sum) {
    __shared__ T partial[32];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) sum += WARP_SHFL_DOWN(0xffffffffu, sum, o, 32);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sum;
    __syncthreads();
    sum = 0;
    if (threadIdx.x < 32) {
        sum = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : T(0);
#pragma unroll
        for (int o = 16; o > 0; o /= 2) sum += WARP_SHFL_DOWN(0xffffffffu, sum, o, 32);
    }
    return sum;
}

// One block of 256 threads per row: for very long rows.
template <typename T>
__device__ __forceinline__ void spmv_block(int rows, const int* __restrict__ ptr,
                                           const int* __restrict__ idx,
                                           const T* __restrict__ val,
                                           const T* __restrict__ x, T* __restrict__ y) {
    int r = blockIdx.x;
    if (r >= rows) return;
    T sum = 0;
    for (int k = ptr[r] + threadIdx.x, end = ptr[r + 1]; k < end; k += blockDim.x)
        sum += val[k] * load_x(x, idx[k]);
    sum = block_sum(sum);
    if (threadIdx.x == 0) y[r] = sum;
}

#define AUGUR_ARGS(T) int rows, const int* __restrict__ ptr, const int* __restrict__ idx, \
    const T* __restrict__ val, const T* __restrict__ x, T* __restrict__ y
#define AUGUR_PASS rows, ptr, idx, val, x, y

#define AUGUR_INSTANTIATE(T, S)                                                              \
    extern "C" __global__ void spmv_scalar_##S(AUGUR_ARGS(T)) { spmv_scalar<T>(AUGUR_PASS); } \
    extern "C" __global__ void spmv_vector2_##S(AUGUR_ARGS(T)) { spmv_vector<T, 2>(AUGUR_PASS); } \
    extern "C" __global__ void spmv_vector4_##S(AUGUR_ARGS(T)) { spmv_vector<T, 4>(AUGUR_PASS); } \
    extern "C" __global__ void spmv_vector8_##S(AUGUR_ARGS(T)) { spmv_vector<T, 8>(AUGUR_PASS); } \
    extern "C" __global__ void spmv_vector16_##S(AUGUR_ARGS(T)) { spmv_vector<T, 16>(AUGUR_PASS); } \
    extern "C" __global__ void spmv_vector32_##S(AUGUR_ARGS(T)) { spmv_vector<T, 32>(AUGUR_PASS); } \
    extern "C" __global__ void spmv_block_##S(AUGUR_ARGS(T)) { spmv_block<T>(AUGUR_PASS); }

AUGUR_INSTANTIATE(float, f32)
AUGUR_INSTANTIATE(double, f64)

// ---- Work-balanced kernels ------------------------------------------------------------------

// Merge-path (Merrill & Garland, SC'16): the merge of row ends and nonzero indices is cut into
// equal pieces of MP_ITEMS items, one per thread. Setup: merge_partition finds where each
// piece starts. Each thread writes the rows it finishes and leaves the unfinished head of its last
// row as a carry, which merge_path_fixup adds after all pieces are done.
#ifndef MP_ITEMS
#error "MP_ITEMS comes from the host as -DMP_ITEMS=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif

__device__ __forceinline__ int merge_path_search(long long d, const int* __restrict__ ptr,
                                                 int rows, int nnz) {
    long long lo = d - nnz > 0 ? d - nnz : 0;
    long long hi = d < rows ? d : rows;
    while (lo < hi) {
        long long mid = (lo + hi) >> 1;
        if ((long long)ptr[mid + 1] < d - mid) lo = mid + 1; else hi = mid;
    }
    return (int)lo;
}

// Where each of `pieces` pieces of `items` merge items starts (and, at index pieces, the end): the
// setup of merge_path (items = MP_ITEMS) and merge_tiled (items = MT_TILE).
extern "C" __global__ void merge_partition(int rows, int nnz, const int* __restrict__ ptr,
                                           long long pieces, long long items,
                                           int* __restrict__ start_row) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p > pieces) return;
    long long total = (long long)rows + nnz;
    long long d = p * items < total ? p * items : total;
    start_row[p] = merge_path_search(d, ptr, rows, nnz);
}

template <typename T>
__device__ __forceinline__ void merge_path(int rows, int nnz, const int* __restrict__ ptr,
                                           const int* __restrict__ idx, const T* __restrict__ val,
                                           const T* __restrict__ x, T* __restrict__ y,
                                           long long pieces, const int* __restrict__ start_row,
                                           int* __restrict__ carry_row, T* __restrict__ carry_val) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pieces) return;
    long long total = (long long)rows + nnz;
    long long d0 = p * MP_ITEMS, d1 = d0 + MP_ITEMS < total ? d0 + MP_ITEMS : total;
    int row = start_row[p], row1 = start_row[p + 1];
    int k = (int)(d0 - row), k1 = (int)(d1 - row1);
    T sum = 0;
    for (; row < row1; ++row) {
        for (int end = ptr[row + 1]; k < end; ++k) sum += val[k] * load_x(x, idx[k]);
        y[row] = sum;
        sum = 0;
    }
    for (; k < k1; ++k) sum += val[k] * load_x(x, idx[k]);
    carry_row[p] = row1;
    carry_val[p] = sum;
}

// Adds the carries to y. Carries come in piece order, so their rows never decrease: a warp first
// sums the carries of each run of equal rows (a segmented suffix scan by shuffles) and only the
// first lane of a run adds it, one atomic per row and warp instead of one per piece. Without this,
// the pieces inside a row of millions of entries all hit one address and serialise.
template <typename T>
__device__ __forceinline__ void merge_path_fixup(int rows, long long pieces,
                                                 const int* __restrict__ carry_row,
                                                 const T* __restrict__ carry_val,
                                                 T* __restrict__ y) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    bool valid = p < pieces;
    int row = valid ? carry_row[p] : -1 - (int)(threadIdx.x & 31);
    T v = valid ? carry_val[p] : T(0);
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        T vo = WARP_SHFL_DOWN(0xffffffffu, v, o, 32);
        int ro = WARP_SHFL_DOWN(0xffffffffu, row, o, 32);
        if (lane + o < 32 && ro == row) v += vo;
    }
    int prev = WARP_SHFL_UP(0xffffffffu, row, 1, 32);
    bool head = lane == 0 || prev != row;
    if (valid && head && row < rows && v != T(0)) atomicAdd(y + row, v);
}

// nnz-split: each warp takes NS_STEPS x 32 consecutive nonzeros, lane l the ones at l, l+32, ...
// (coalesced). Per step of 32 entries the warp loads the starts of the 32 rows after the step's
// first row (one coalesced load), and each lane finds its entry's row among them by a branchless
// search over shuffles (no dependent global loads; a step in which more than 32 rows start, i.e.
// empty rows, falls back to a binary search in memory). A segmented warp scan by row sums each
// step's products; the last lane of each row segment writes it: a plain store for a row wholly
// inside the warp's window, an atomic add for the window's first and last rows, which other
// warps share (y is zeroed first, which also covers empty rows).
#ifndef NS_STEPS
#error "NS_STEPS comes from the host as -DNS_STEPS=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif

// Row r's sum (or a segment of it) into y: stored when the row lies inside the window
// (row_lo, row_hi), added otherwise.
template <typename T>
__device__ __forceinline__ void nnz_split_emit(T* __restrict__ y, int r, T v, int row_lo,
                                               int row_hi) {
    if (r > row_lo && r < row_hi) y[r] = v;
    else if (v != T(0)) atomicAdd(y + r, v);
}

template <typename T>
__device__ __forceinline__ void nnz_split(int rows, int nnz, const int* __restrict__ ptr,
                                          const int* __restrict__ idx, const T* __restrict__ val,
                                          const T* __restrict__ x, T* __restrict__ y) {
    long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    long long base = warp * 32 * NS_STEPS;
    if (base >= nnz) return;  // the whole warp leaves together
    int end = (int)(base + 32 * NS_STEPS < nnz ? base + 32 * NS_STEPS : nnz);
    // Lanes 0 and 1 find the rows of the window's first and last entries: the last row whose
    // start is <= k owns entry k (empty rows before it start at or before k too).
    int target = lane == 0 ? (int)base : end - 1;
    int lo = 0, hi = rows - 1;
    if (lane < 2) {
        while (lo < hi) {
            int mid = (lo + hi + 1) >> 1;
            if (ptr[mid] <= target) lo = mid; else hi = mid - 1;
        }
    }
    const int row_lo = WARP_SHFL(0xffffffffu, lo, 0, 32);
    const int row_hi = WARP_SHFL(0xffffffffu, lo, 1, 32);
    int rc = row_lo;  // the row of this step's first entry
    // The last row segment of a step is carried into the next step (same in every lane), so a
    // long row costs one write per warp rather than one per step.
    int ckey = -1;
    T cval = 0;
    for (int s = 0; s < NS_STEPS; ++s) {
        int s0 = (int)base + s * 32;
        if (s0 >= end) break;  // uniform across the warp
        int k = s0 + lane;
        bool valid = k < end;
        // Starts of the rows rc+1 .. rc+32; rows past the window start after its last entry.
        // Once rc is the window's last row (inside a long row) every entry is in it.
        int next0 = s0 + 32;
        int cnt = 0, adv = 0;
        if (rc < row_hi) {  // uniform across the warp
            int pr = rc + 1 + lane;
            int p = pr <= row_hi ? ptr[pr] : 0x7fffffff;
            // cnt = how many of them start at or before k (sorted: a search over the lanes).
#pragma unroll
            for (int st = 16; st > 0; st >>= 1) {
                int q = WARP_SHFL(0xffffffffu, p, cnt + st - 1, 32);
                if (q <= k) cnt += st;
            }
            if (WARP_SHFL(0xffffffffu, p, cnt, 32) <= k) cnt += 1;
            // The next step's first row: how many of the 32 start at or before its first entry.
            adv = __popc(warp_ballot(0xffffffffu, p <= next0));
        }
        int key = 0x7fffffff;
        T v = 0;
        if (valid) {
            int r = rc + cnt;
            if (cnt == 32) {  // more than 32 rows start in this step (empty rows)
                int a = rc + 32, b = row_hi;
                while (a < b) {
                    int m = (a + b + 1) >> 1;
                    if (ptr[m] <= k) a = m; else b = m - 1;
                }
                r = a;
            }
            key = r;
            v = val[k] * load_x(x, idx[k]);
        }
        if (adv == 32 && next0 < end) {
            int a = rc + 32, b = row_hi;
            while (a < b) {
                int m = (a + b + 1) >> 1;
                if (ptr[m] <= next0) a = m; else b = m - 1;
            }
            rc = a;
        } else {
            rc += adv;
        }
        // Inclusive segmented scan: keys are non-decreasing across lanes.
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            T u = WARP_SHFL_UP(0xffffffffu, v, o, 32);
            int ku = WARP_SHFL_UP(0xffffffffu, key, o, 32);
            if (lane >= o && ku == key) v += u;
        }
        int next = WARP_SHFL_DOWN(0xffffffffu, key, 1, 32);
        bool tail = valid && (lane == 31 || next != key);
        int key0 = WARP_SHFL(0xffffffffu, key, 0, 32);
        bool join = ckey >= 0 && ckey == key0;
        if (ckey >= 0 && !join && lane == 0) nnz_split_emit(y, ckey, cval, row_lo, row_hi);
        if (join && tail && key == key0) v += cval;
        ckey = -1;
        cval = 0;
        bool more = s + 1 < NS_STEPS && next0 < end;
        bool hold = more && WARP_SHFL(0xffffffffu, (int)valid, 31, 32);
        int key31 = WARP_SHFL(0xffffffffu, key, 31, 32);
        T v31 = WARP_SHFL(0xffffffffu, v, 31, 32);
        if (tail && !(hold && lane == 31)) nnz_split_emit(y, key, v, row_lo, row_hi);
        if (hold) {
            ckey = key31;
            cval = v31;
        }
    }
    if (ckey >= 0 && lane == 0) nnz_split_emit(y, ckey, cval, row_lo, row_hi);
}

#define AUGUR_BALANCED(T, S)                                                                   \
    extern "C" __global__ void spmv_merge_path_##S(AUGUR_ARGS(T), int nnz, long long pieces,  \
        const int* __restrict__ start_row, int* __restrict__ carry_row,                        \
        T* __restrict__ carry_val) {                                                            \
        merge_path<T>(rows, nnz, ptr, idx, val, x, y, pieces, start_row, carry_row, carry_val); \
    }                                                                                           \
    extern "C" __global__ void merge_path_fixup_##S(int rows, long long pieces,               \
        const int* __restrict__ carry_row, const T* __restrict__ carry_val, T* __restrict__ y) { \
        merge_path_fixup<T>(rows, pieces, carry_row, carry_val, y);                             \
    }                                                                                           \
    extern "C" __global__ void spmv_nnz_split_##S(AUGUR_ARGS(T), int nnz) {                   \
        nnz_split<T>(rows, nnz, ptr, idx, val, x, y);                                           \
    }

AUGUR_BALANCED(float, f32)
AUGUR_BALANCED(double, f64)

// ---- Adaptive: vector lanes sized by the mean row, long rows shared by the block -------------

// One launch, no setup: the known tier's safe pick when the shape cannot tell short regular rows
// from a few very long ones (issue 18). L lanes per row, L from the mean row length (the host's
// rule, adaptive_lanes in kernels/src/cuda/spmv.rs, passed as `lanes`): 1 below 16 entries, else
// the power of two at or below a quarter of the mean, at most 32; a warp takes 32 / L consecutive rows, a block 8 warps. A row
// of more than AD_LONG x L entries that stands out in its warp (more than AD_REL x the mean of
// the warp's rows, or more than AD_FAR x AD_LONG x L entries) is left to its block: after the
// warps' rows, the block's 8 warps share its long rows in pieces of AD_PIECE entries, one warp
// per piece, added with atomics into the row's y (zeroed first). So a row of 10^5 entries costs
// its block ~400 steps of 32 lanes, not ~10^5 / L steps of one group as in spmv_vector; a row of
// 10^6 or more still costs one block ~10^6 / 256 steps (28-45x the best kernel on arrowhead and
// hub matrices). A warp of rows of similar length (a run of equal rows, as A x I_k makes) keeps
// them: every lane is busy there, and handing 256 such rows to the block, one warp each, made
// the kernel 2-5x slower than scalar.
#ifndef AD_LONG
#error "AD_LONG comes from the host as -DAD_LONG=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef AD_PIECE
#error "AD_PIECE comes from the host as -DAD_PIECE=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef AD_REL
#error "AD_REL comes from the host as -DAD_REL=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef AD_FAR
#error "AD_FAR comes from the host as -DAD_FAR=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif

// A group of L lanes' sum of entries k0, k0 + L, ... below k1, reduced into its first lane.
template <typename T, int L>
__device__ __forceinline__ T group_sum(int k0, int k1, const int* __restrict__ idx,
                                       const T* __restrict__ val, const T* __restrict__ x) {
    T sum = 0;
#pragma unroll 4
    for (int k = k0; k < k1; k += L) sum += val[k] * load_x(x, idx[k]);
#pragma unroll
    for (int o = L / 2; o > 0; o /= 2) sum += WARP_SHFL_DOWN(0xffffffffu, sum, o, L);
    return sum;
}

template <typename T>
__device__ __forceinline__ void spmv_adaptive(int rows, int L, const int* __restrict__ ptr,
                                              const int* __restrict__ idx,
                                              const T* __restrict__ val,
                                              const T* __restrict__ x, T* __restrict__ y) {
    __shared__ int s_row[256];        // the block's long rows (at most one per thread)
    __shared__ int s_first[257];      // pieces of the long rows before each; [n] = all
    __shared__ int s_n;
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int per_warp = 32 / L;
    const long long first = ((long long)blockIdx.x * warps + warp) * per_warp;
    if (threadIdx.x == 0) s_n = 0;
    // Lane q < per_warp reads the ends of row first + q.
    const long long r = first + lane;
    int s = 0, e = 0;
    if (lane < per_warp && r < rows) {
        s = ptr[r];
        e = ptr[r + 1];
    }
    // The warp's rows: nv of them, `total` entries (the first row's start to the last's end).
    const long long left = (long long)rows - first;
    const int nv = left <= 0 ? 0 : (left < per_warp ? (int)left : per_warp);
    const int s0 = WARP_SHFL(full, s, 0, 32);
    const int e1 = WARP_SHFL(full, e, nv > 0 ? nv - 1 : 0, 32);
    const long long len = (long long)e - s, total = (long long)e1 - s0;
    const int lng = len > (long long)AD_LONG * L &&
                    (len * nv > (long long)AD_REL * total || len > (long long)AD_FAR * AD_LONG * L);
    __syncthreads();
    if (lng) {
        s_row[atomicAdd(&s_n, 1)] = (int)r;
        y[r] = T(0);
    }
    // Group g of L lanes sums row first + g (a long row is empty here).
    const int g = lane / L, sub = lane % L;
    const int gs = WARP_SHFL(full, s, g, 32);
    const int ge = WARP_SHFL(full, lng ? s : e, g, 32);
    const int glong = WARP_SHFL(full, lng, g, 32);
    // L is the same on every lane: one branch, with the lane count known to the compiler so that
    // the loop unrolls (a loop striding by a run-time L kept one load in flight per lane: 3.5x
    // slower than scalar on rows of 40-70 entries).
    T sum;
    switch (L) {
        case 1: sum = group_sum<T, 1>(gs + sub, ge, idx, val, x); break;
        case 2: sum = group_sum<T, 2>(gs + sub, ge, idx, val, x); break;
        case 4: sum = group_sum<T, 4>(gs + sub, ge, idx, val, x); break;
        case 8: sum = group_sum<T, 8>(gs + sub, ge, idx, val, x); break;
        case 16: sum = group_sum<T, 16>(gs + sub, ge, idx, val, x); break;
        default: sum = group_sum<T, 32>(gs + sub, ge, idx, val, x); break;
    }
    if (sub == 0 && first + g < rows && !glong) y[first + g] = sum;
    if (!__syncthreads_or(lng)) return;
    // The block's long rows: warp 0 counts their pieces, then every warp takes pieces in turn.
    const int n = s_n;
    if (warp == 0) {
        int carry = 0;
        for (int b = 0; b < n; b += 32) {
            const int j = b + lane;
            int c = 0;
            if (j < n) {
                const int len = ptr[s_row[j] + 1] - ptr[s_row[j]];
                c = len / AD_PIECE + (len % AD_PIECE != 0);
            }
            int inc = c;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const int v = WARP_SHFL_UP(full, inc, o, 32);
                if (lane >= o) inc += v;
            }
            if (j < n) s_first[j + 1] = carry + inc;
            carry += WARP_SHFL(full, inc, 31, 32);
        }
        if (lane == 0) s_first[0] = 0;
    }
    __syncthreads();
    const int pieces = s_first[n];
    for (int i = warp; i < pieces; i += warps) {
        int lo = 0, hi = n - 1;  // the long row of piece i: the last j with s_first[j] <= i
        while (lo < hi) {
            const int mid = (lo + hi + 1) >> 1;
            if (s_first[mid] <= i) lo = mid; else hi = mid - 1;
        }
        const int rr = s_row[lo], end = ptr[rr + 1];
        const int k0 = ptr[rr] + (i - s_first[lo]) * AD_PIECE;
        const int k1 = end - k0 > AD_PIECE ? k0 + AD_PIECE : end;
        T part = 0;
#pragma unroll 4
        for (int k = k0 + lane; k < k1; k += 32) part += val[k] * load_x(x, idx[k]);
#pragma unroll
        for (int o = 16; o > 0; o /= 2) part += WARP_SHFL_DOWN(full, part, o, 32);
        if (lane == 0) atomicAdd(y + rr, part);
    }
}

#define AUGUR_ADAPTIVE(T, S)                                                                   \
    extern "C" __global__ void spmv_adaptive_##S(AUGUR_ARGS(T), int lanes) {                  \
        spmv_adaptive<T>(rows, lanes, ptr, idx, val, x, y);                                    \
    }

AUGUR_ADAPTIVE(float, f32)
AUGUR_ADAPTIVE(double, f64)

// ---- Row binning (CSR-adaptive style) -------------------------------------------------------

// Rows listed in `rows_list` (one bin), L lanes per row, as spmv_vector.
template <typename T, int L>
__device__ __forceinline__ void spmv_rows(int n, const int* __restrict__ rows_list,
                                          const int* __restrict__ ptr, const int* __restrict__ idx,
                                          const T* __restrict__ val, const T* __restrict__ x,
                                          T* __restrict__ y) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long g = t / L;
    if (g >= n) return;
    lanes_row<T, L>(rows_list[g], (int)(t % L), ptr, idx, val, x, y);
}

// Long rows cut into chunks of LONG_CHUNK entries, one block per chunk, added into y with atomics
// (the rows are zeroed first by zero_rows).
#ifndef LONG_CHUNK
#error "LONG_CHUNK comes from the host as -DLONG_CHUNK=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif

template <typename T>
__device__ __forceinline__ void spmv_chunks(int nchunks, const int* __restrict__ chunk_row,
                                            const int* __restrict__ chunk_begin,
                                            const int* __restrict__ ptr,
                                            const int* __restrict__ idx,
                                            const T* __restrict__ val, const T* __restrict__ x,
                                            T* __restrict__ y) {
    int c = blockIdx.x;
    if (c >= nchunks) return;
    int r = chunk_row[c], k0 = chunk_begin[c], end = ptr[r + 1];
    int k1 = k0 + LONG_CHUNK < end ? k0 + LONG_CHUNK : end;
    T sum = 0;
    for (int k = k0 + threadIdx.x; k < k1; k += blockDim.x) sum += val[k] * load_x(x, idx[k]);
    sum = block_sum(sum);
    if (threadIdx.x == 0) atomicAdd(y + r, sum);
}

template <typename T>
__device__ __forceinline__ void zero_rows(int n, const int* __restrict__ rows_list,
                                          T* __restrict__ y) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[rows_list[i]] = T(0);
}

#define AUGUR_ROWS_ARGS(T) int n, const int* __restrict__ rows_list, const int* __restrict__ ptr, \
    const int* __restrict__ idx, const T* __restrict__ val, const T* __restrict__ x,              \
    T* __restrict__ y
#define AUGUR_ROWS_PASS n, rows_list, ptr, idx, val, x, y

#define AUGUR_BINNED(T, S)                                                                        \
    extern "C" __global__ void spmv_rows1_##S(AUGUR_ROWS_ARGS(T)) { spmv_rows<T, 1>(AUGUR_ROWS_PASS); }   \
    extern "C" __global__ void spmv_rows2_##S(AUGUR_ROWS_ARGS(T)) { spmv_rows<T, 2>(AUGUR_ROWS_PASS); }   \
    extern "C" __global__ void spmv_rows4_##S(AUGUR_ROWS_ARGS(T)) { spmv_rows<T, 4>(AUGUR_ROWS_PASS); }   \
    extern "C" __global__ void spmv_rows8_##S(AUGUR_ROWS_ARGS(T)) { spmv_rows<T, 8>(AUGUR_ROWS_PASS); }   \
    extern "C" __global__ void spmv_rows16_##S(AUGUR_ROWS_ARGS(T)) { spmv_rows<T, 16>(AUGUR_ROWS_PASS); } \
    extern "C" __global__ void spmv_rows32_##S(AUGUR_ROWS_ARGS(T)) { spmv_rows<T, 32>(AUGUR_ROWS_PASS); } \
    extern "C" __global__ void spmv_chunks_##S(int nchunks, const int* __restrict__ chunk_row,    \
        const int* __restrict__ chunk_begin, const int* __restrict__ ptr,                          \
        const int* __restrict__ idx, const T* __restrict__ val, const T* __restrict__ x,          \
        T* __restrict__ y) {                                                                        \
        spmv_chunks<T>(nchunks, chunk_row, chunk_begin, ptr, idx, val, x, y);                     \
    }                                                                                               \
    extern "C" __global__ void zero_rows_##S(int n, const int* __restrict__ rows_list,            \
                                             T* __restrict__ y) {                                  \
        zero_rows<T>(n, rows_list, y);                                                              \
    }

AUGUR_BINNED(float, f32)
AUGUR_BINNED(double, f64)

// ---- Tiled merge-path (CUB-style staging) ---------------------------------------------------

// Each block takes a tile of MT_THREADS x MT_ITEMS merge items (rows + nonzeros). The tile's row
// ends and the products val[k] * x[idx[k]] of its nonzeros are staged in shared memory with
// coalesced loads; each thread then walks MT_ITEMS items of the tile from shared memory. A row
// finished by a thread gets the partial sums of the threads before it in the tile (walking back
// through their carries); the tile's unfinished last row goes to the tile carry, which
// merge_path_fixup adds after all tiles, exactly as for merge_path.
#ifndef MT_THREADS
#error "MT_THREADS comes from the host as -DMT_THREADS=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef MT_ITEMS
#error "MT_ITEMS comes from the host as -DMT_ITEMS=... (kernels/src/cuda/spmv.rs; kernels/src/cuda/module.rs)"
#endif
#define MT_TILE (MT_THREADS * MT_ITEMS)

template <typename T>
__device__ __forceinline__ void merge_tile(int rows, int nnz, const int* __restrict__ ptr,
                                           const int* __restrict__ idx, const T* __restrict__ val,
                                           const T* __restrict__ x, T* __restrict__ y,
                                           long long tiles, const int* __restrict__ start_row,
                                           int* __restrict__ carry_row, T* __restrict__ carry_val) {
    __shared__ int s_end[MT_TILE];
    __shared__ T s_prod[MT_TILE];
    __shared__ int s_crow[MT_THREADS];
    __shared__ T s_cval[MT_THREADS];
    long long tile = blockIdx.x;
    if (tile >= tiles) return;
    long long total = (long long)rows + nnz;
    long long d0 = tile * MT_TILE, d1 = d0 + MT_TILE < total ? d0 + MT_TILE : total;
    int r0 = start_row[tile], r1 = start_row[tile + 1];
    int k0 = (int)(d0 - r0), k1 = (int)(d1 - r1);
    int nrows = r1 - r0, nnzs = k1 - k0;
    for (int i = threadIdx.x; i < nrows; i += MT_THREADS) s_end[i] = ptr[r0 + i + 1] - k0;
    for (int j = threadIdx.x; j < nnzs; j += MT_THREADS) s_prod[j] = val[k0 + j] * load_x(x, idx[k0 + j]);
    __syncthreads();
    // This thread's start in the tile's merge: i rows finished, j nonzeros consumed.
    int items = nrows + nnzs;
    int diag = threadIdx.x * MT_ITEMS < items ? threadIdx.x * MT_ITEMS : items;
    int lo = diag - nnzs > 0 ? diag - nnzs : 0, hi = diag < nrows ? diag : nrows;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (s_end[mid] < diag - mid) lo = mid + 1; else hi = mid;
    }
    int i = lo, j = diag - lo;
    int stop = diag + MT_ITEMS < items ? diag + MT_ITEMS : items;
    T sum = 0;
    bool first = true;
    // Finished rows are written after the carries are shared; remember the first one.
    int first_row = -1;
    T first_sum = 0;
    for (int step = diag; step < stop; ++step) {
        if (i < nrows && s_end[i] <= j) {
            if (first) { first_row = i; first_sum = sum; first = false; }
            else y[r0 + i] = sum;
            sum = 0;
            ++i;
        } else {
            sum += s_prod[j];
            ++j;
        }
    }
    s_crow[threadIdx.x] = i;   // the row this thread's trailing partial belongs to
    s_cval[threadIdx.x] = sum;
    __syncthreads();
    if (first_row >= 0) {
        // Add the partials of the threads before this one that are still in first_row.
        T head = first_sum;
        for (int u = (int)threadIdx.x - 1; u >= 0 && s_crow[u] == first_row; --u) head += s_cval[u];
        y[r0 + first_row] = head;
    }
    if (threadIdx.x == MT_THREADS - 1) {
        // The tile's unfinished last row: the partials of the trailing threads in row nrows.
        T tail = 0;
        for (int u = MT_THREADS - 1; u >= 0 && s_crow[u] == nrows; --u) tail += s_cval[u];
        carry_row[tile] = r1;
        carry_val[tile] = tail;
    }
}

#define AUGUR_TILED(T, S)                                                                       \
    extern "C" __global__ void spmv_merge_tiled_##S(AUGUR_ARGS(T), int nnz, long long tiles,   \
        const int* __restrict__ start_row, int* __restrict__ carry_row,                          \
        T* __restrict__ carry_val) {                                                              \
        merge_tile<T>(rows, nnz, ptr, idx, val, x, y, tiles, start_row, carry_row, carry_val);  \
    }

AUGUR_TILED(float, f32)
AUGUR_TILED(double, f64)

// ---- The x-gather ceiling (a measurement, not an SpMV kernel) -------------------------------

// Streams values and column indices once, coalesced, and gathers x in the matrix's column order,
// with no row structure at all: GF_ITEMS nonzeros per thread, lane-strided. Any CSR kernel makes
// at least these loads, so its time is the empirical ceiling for this matrix's x access pattern
// (random columns cost a 32-byte sector per 4- or 8-byte x value). One partial sum per warp is
// written so that the loads cannot be optimised away.
#define GF_ITEMS 8

template <typename T>
__device__ __forceinline__ void gather_ceiling(int nnz, const int* __restrict__ idx,
                                               const T* __restrict__ val,
                                               const T* __restrict__ x, T* __restrict__ out) {
    long long base = ((long long)blockIdx.x * blockDim.x + (threadIdx.x & ~31)) * GF_ITEMS;
    int lane = threadIdx.x & 31;
    T sum = 0;
#pragma unroll
    for (int j = 0; j < GF_ITEMS; ++j) {
        long long k = base + j * 32 + lane;
        if (k < nnz) sum += val[k] * load_x(x, idx[k]);
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) sum += WARP_SHFL_DOWN(0xffffffffu, sum, o, 32);
    if (lane == 0) out[((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5] = sum;
}

extern "C" __global__ void gather_ceiling_f32(int nnz, const int* __restrict__ idx,
                                              const float* __restrict__ val,
                                              const float* __restrict__ x,
                                              float* __restrict__ out) {
    gather_ceiling<float>(nnz, idx, val, x, out);
}
extern "C" __global__ void gather_ceiling_f64(int nnz, const int* __restrict__ idx,
                                              const double* __restrict__ val,
                                              const double* __restrict__ x,
                                              double* __restrict__ out) {
    gather_ceiling<double>(nnz, idx, val, x, out);
}
