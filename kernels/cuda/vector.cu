// Vector kernels of distributed products and device-side iterations (issue 23), loaded by
// kernels::cuda::vector::VectorKernels:
//  - the halo exchange: `pack` gathers the x entries a neighbour reads into one contiguous send
//    buffer; `scatter_add` adds the remote block's products (one per row that has remote
//    entries) into y;
//  - conjugate gradients without host round trips: `dot_partial` + `dot_finish` (a
//    deterministic two-level sum: the same bits on every run), `cg_xr` and `cg_p`, whose scalars
//    (alpha = rz / pAp, beta = rz_new / rz) are read from device memory, never from the host.
// Grid-stride loops over a grid the host sizes (kernels/src/cuda/vector.rs).

#ifndef DOT_BLOCKS
#error "DOT_BLOCKS comes from the host as -DDOT_BLOCKS=... (kernels/src/cuda/vector.rs; kernels/src/cuda/module.rs)"
#endif

#define DOT_THREADS 256

template <typename T>
__device__ __forceinline__ void pack(int n, const int* __restrict__ idx, const T* __restrict__ x,
                                     T* __restrict__ out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = x[idx[i]];
}

template <typename T>
__device__ __forceinline__ void scatter_add(int n, const int* __restrict__ rows,
                                            const T* __restrict__ v, T* __restrict__ y) {
    // Rows are distinct: no two threads add to the same y.
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[rows[i]] += v[i];
}

// The sum over the block of every thread's v, in thread 0 (fixed order: deterministic).
template <typename T>
__device__ __forceinline__ T block_total(T v) {
    __shared__ T part[DOT_THREADS / 32];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += WARP_SHFL_DOWN(0xffffffffu, v, o, 32);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0;
    if (threadIdx.x < 32) {
        v = threadIdx.x < (DOT_THREADS / 32) ? part[threadIdx.x] : T(0);
#pragma unroll
        for (int o = 16; o > 0; o /= 2) v += WARP_SHFL_DOWN(0xffffffffu, v, o, 32);
    }
    __syncthreads();
    return v;
}

// partial[slot * DOT_BLOCKS + blockIdx.x] = this block's share of sum(a * b); a grid of at most
// DOT_BLOCKS blocks of DOT_THREADS threads.
template <typename T>
__device__ __forceinline__ void dot_partial(int n, const T* __restrict__ a,
                                            const T* __restrict__ b, T* __restrict__ partial,
                                            int slot) {
    T s = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        s += a[i] * b[i];
    s = block_total(s);
    if (threadIdx.x == 0) partial[slot * DOT_BLOCKS + blockIdx.x] = s;
}

// out[k] = sum of the `blocks` partials of slot k, for k < slots; one block of DOT_THREADS.
template <typename T>
__device__ __forceinline__ void dot_finish(int blocks, int slots, const T* __restrict__ partial,
                                           T* __restrict__ out) {
    for (int k = 0; k < slots; ++k) {
        T s = 0;
        for (int i = threadIdx.x; i < blocks; i += blockDim.x) s += partial[k * DOT_BLOCKS + i];
        s = block_total(s);
        if (threadIdx.x == 0) out[k] = s;
    }
}

// CG's update of x and r with alpha = num / den (rz / pAp), then z = r / diag (Jacobi: times
// inv_diag), and this block's shares of r.z and r.r in partial slots 0 and 1 (for dot_finish).
// Converged (rr_prev <= tol2 * bb, all read from device memory, so every block decides the
// same): x and r are left as they are, z and the sums still computed (the first call, with
// p = ap = 0, computes z, r.z and r.r of r = b).
template <typename T>
__device__ __forceinline__ void cg_xr(int n, const T* __restrict__ num, const T* __restrict__ den,
                                      const T* __restrict__ rr_prev, const T* __restrict__ bb,
                                      T tol2, const T* __restrict__ p, const T* __restrict__ ap,
                                      const T* __restrict__ inv_diag, T* __restrict__ x,
                                      T* __restrict__ r, T* __restrict__ z,
                                      T* __restrict__ partial) {
    bool go = !(*rr_prev <= tol2 * *bb);
    T alpha = (go && *den != T(0)) ? *num / *den : T(0);
    T rz = 0, rr = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        T ri = r[i];
        if (go) {
            x[i] += alpha * p[i];
            ri -= alpha * ap[i];
            r[i] = ri;
        }
        T zi = ri * inv_diag[i];
        z[i] = zi;
        rz += ri * zi;
        rr += ri * ri;
    }
    rz = block_total(rz);
    rr = block_total(rr);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = rz;
        partial[DOT_BLOCKS + blockIdx.x] = rr;
    }
}

// p_out = z + beta p_in with beta = num / den (rz_new / rz_old); p_out may be p_in. Block 0
// records r.r of this iteration (summed over every rank) in hist.
template <typename T>
__device__ __forceinline__ void cg_p(int n, const T* __restrict__ num, const T* __restrict__ den,
                                     const T* __restrict__ rr, T* __restrict__ hist,
                                     const T* __restrict__ z, const T* p_in, T* p_out) {
    T beta = *den != T(0) ? *num / *den : T(0);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p_out[i] = z[i] + beta * p_in[i];
    if (blockIdx.x == 0 && threadIdx.x == 0) *hist = *rr;
}

#define AUGUR_VECTOR(T, S)                                                                      \
    extern "C" __global__ void pack_##S(int n, const int* __restrict__ idx,                     \
                                        const T* __restrict__ x, T* __restrict__ out) {         \
        pack<T>(n, idx, x, out);                                                                \
    }                                                                                           \
    extern "C" __global__ void scatter_add_##S(int n, const int* __restrict__ rows,             \
                                               const T* __restrict__ v, T* __restrict__ y) {    \
        scatter_add<T>(n, rows, v, y);                                                          \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS)                                   \
        dot_partial_##S(int n, const T* __restrict__ a, const T* __restrict__ b,                \
                        T* __restrict__ partial, int slot) {                                    \
        dot_partial<T>(n, a, b, partial, slot);                                                 \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS)                                   \
        dot_finish_##S(int blocks, int slots, const T* __restrict__ partial,                    \
                       T* __restrict__ out) {                                                   \
        dot_finish<T>(blocks, slots, partial, out);                                             \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS)                                   \
        cg_xr_##S(int n, const T* __restrict__ num, const T* __restrict__ den,                  \
                  const T* __restrict__ rr_prev, const T* __restrict__ bb, T tol2,              \
                  const T* __restrict__ p, const T* __restrict__ ap,                            \
                  const T* __restrict__ inv_diag, T* __restrict__ x, T* __restrict__ r,         \
                  T* __restrict__ z, T* __restrict__ partial) {                                 \
        cg_xr<T>(n, num, den, rr_prev, bb, tol2, p, ap, inv_diag, x, r, z, partial);            \
    }                                                                                           \
    extern "C" __global__ void cg_p_##S(int n, const T* __restrict__ num,                       \
                                        const T* __restrict__ den, const T* __restrict__ rr,    \
                                        T* __restrict__ hist, const T* __restrict__ z,          \
                                        const T* p_in, T* p_out) {                              \
        cg_p<T>(n, num, den, rr, hist, z, p_in, p_out);                                         \
    }

AUGUR_VECTOR(float, f32)
AUGUR_VECTOR(double, f64)
