// CSR SpMV kernels, y = A x, with i32 row pointers and column indices.
// Compiled at run time by NVRTC (kernels::cuda::module); every entry point is extern "C" and
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

// L consecutive lanes of a warp per row (L = 2, 4, 8, 16, 32), shuffle reduction. A group of L
// lanes is either wholly active or wholly returned, so its own mask is exact.
template <typename T, int L>
__device__ __forceinline__ void spmv_vector(int rows, const int* __restrict__ ptr,
                                            const int* __restrict__ idx,
                                            const T* __restrict__ val,
                                            const T* __restrict__ x, T* __restrict__ y) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long r = t / L;
    int lane = (int)(t % L);
    if (r >= rows) return;
    unsigned group = (L == 32) ? 0xffffffffu : (((1u << L) - 1u) << ((threadIdx.x & 31) / L * L));
    T sum = 0;
    for (int k = ptr[r] + lane, end = ptr[r + 1]; k < end; k += L) sum += val[k] * load_x(x, idx[k]);
#pragma unroll
    for (int o = L / 2; o > 0; o /= 2) sum += __shfl_down_sync(group, sum, o, L);
    if (lane == 0) y[r] = sum;
}

// One block of 256 threads per row: for very long rows.
template <typename T>
__device__ __forceinline__ void spmv_block(int rows, const int* __restrict__ ptr,
                                           const int* __restrict__ idx,
                                           const T* __restrict__ val,
                                           const T* __restrict__ x, T* __restrict__ y) {
    __shared__ T partial[32];
    int r = blockIdx.x;
    if (r >= rows) return;
    T sum = 0;
    for (int k = ptr[r] + threadIdx.x, end = ptr[r + 1]; k < end; k += blockDim.x)
        sum += val[k] * load_x(x, idx[k]);
#pragma unroll
    for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
        sum = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : T(0);
#pragma unroll
        for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
        if (threadIdx.x == 0) y[r] = sum;
    }
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
