// Dense GEMM C = A B on tensor cores, for the GEMM + collective overlap patterns (issue 24).
//
// Row-major A [m][k], B [k][n], C [m][n] as 16-bit floats (f16 or bf16), f32 accumulation, C
// rounded to the input type. k and n must be multiples of 8 (16-byte rows of chunks; the host
// checks). A block of 256 threads (8 warps, 2 x 4) computes a BM x 128 tile of C (BM = 128 or 64:
// each warp BM/2 x 32), walking k in steps of 32: GEMM_STAGES shared-memory stages filled by
// cp.async (the next tiles' copies in flight while this one is multiplied), fragments by ldmatrix
// (B transposed on the way), m16n8k16 products (mma.h). Tiles past the matrix edges are filled
// with zeros by cp.async and their outputs not written.
//
// This is the plain Ampere-style kernel (mma.sync); Hopper's cuBLAS uses wgmma and TMA, which
// this does not: `augur overlap gemm` measures how far behind that leaves it.

typedef unsigned short u16;

#ifndef GEMM_STAGES
#error "GEMM_STAGES comes from the host as -DGEMM_STAGES=... (kernels/src/cuda/gemm.rs; kernels/src/cuda/module.rs)"
#endif

#define GEMM_BN 128
#define GEMM_BK 32
#define GEMM_A_ROW (GEMM_BK + 8)  // halves per padded A row (ldmatrix without bank conflicts)
#define GEMM_B_ROW (GEMM_BN + 8)  // halves per padded B row

// Shared memory of one stage (halves): the A tile, then the B tile.
template <int BM>
struct GemmSmem {
    static const int A = BM * GEMM_A_ROW;
    static const int B = GEMM_BK * GEMM_B_ROW;
    static const int STAGE = A + B;
};

// Copy the (BM x 32) A tile and the (32 x 128) B tile of step kt into `stage`.
template <int BM>
__device__ __forceinline__ void gemm_load(u16* smem, int stage, int kt, int m, int n, int k,
                                          int row0, int col0, const u16* __restrict__ A,
                                          const u16* __restrict__ B) {
    u16* sa = smem + stage * GemmSmem<BM>::STAGE;
    u16* sb = sa + GemmSmem<BM>::A;
    const int k0 = kt * GEMM_BK;
    // 8 halves (16 bytes) per chunk; k % 8 == 0 and n % 8 == 0, so a chunk is wholly in or out.
    for (int c = threadIdx.x; c < BM * (GEMM_BK / 8); c += blockDim.x) {
        int r = c / (GEMM_BK / 8), cc = (c % (GEMM_BK / 8)) * 8;
        int gr = row0 + r, gk = k0 + cc;
        bool v = gr < m && gk < k;
        const u16* src = v ? A + (long long)gr * k + gk : A;
        cp_async16(smem_addr(sa + r * GEMM_A_ROW + cc), src, v);
    }
    for (int c = threadIdx.x; c < GEMM_BK * (GEMM_BN / 8); c += blockDim.x) {
        int r = c / (GEMM_BN / 8), cc = (c % (GEMM_BN / 8)) * 8;
        int gk = k0 + r, gc = col0 + cc;
        bool v = gk < k && gc < n;
        const u16* src = v ? B + (long long)gk * n + gc : B;
        cp_async16(smem_addr(sb + r * GEMM_B_ROW + cc), src, v);
    }
}

template <typename TT, int BM>
__device__ __forceinline__ void gemm(int m, int n, int k, const u16* __restrict__ A,
                                     const u16* __restrict__ B, u16* __restrict__ C) {
    extern __shared__ __align__(16) u16 smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp >> 2, wn = warp & 3;  // 2 x 4 warps
    const int WM = BM / 2;                     // warp tile: WM x 32
    const int MI = WM / 16, NI = 4;            // m16 and n8 tiles per warp
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * GEMM_BN;
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    const int kt_n = (k + GEMM_BK - 1) / GEMM_BK;

#pragma unroll
    for (int s = 0; s < GEMM_STAGES - 1; ++s) {
        if (s < kt_n) gemm_load<BM>(smem, s, s, m, n, k, row0, col0, A, B);
        cp_async_commit();
    }
    for (int kt = 0; kt < kt_n; ++kt) {
        cp_async_wait<GEMM_STAGES - 2>();
        __syncthreads();  // step kt is in; every warp is done with the stage refilled below
        int pf = kt + GEMM_STAGES - 1;
        if (pf < kt_n) gemm_load<BM>(smem, pf % GEMM_STAGES, pf, m, n, k, row0, col0, A, B);
        cp_async_commit();
        const u16* sa = smem + (kt % GEMM_STAGES) * GemmSmem<BM>::STAGE;
        const u16* sb = sa + GemmSmem<BM>::A;
#pragma unroll
        for (int kk = 0; kk < GEMM_BK; kk += 16) {
            unsigned af[MI][4], bf[NI][2];
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                int r = wm * WM + i * 16 + (lane & 15);
                ldmatrix_x4(af[i], smem_addr(sa + r * GEMM_A_ROW + kk + (lane >> 4) * 8));
            }
#pragma unroll
            for (int j = 0; j < NI / 2; ++j) {
                unsigned q[4];
                int c = wn * 32 + j * 16 + (lane >> 4) * 8;
                ldmatrix_x4_trans(q, smem_addr(sb + (kk + (lane & 15)) * GEMM_B_ROW + c));
                bf[2 * j][0] = q[0];
                bf[2 * j][1] = q[1];
                bf[2 * j + 1][0] = q[2];
                bf[2 * j + 1][1] = q[3];
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) TT::mma(acc[i][j], af[i], bf[j][0], bf[j][1]);
        }
    }
    cp_async_wait<0>();
    // Fragment (g, 2t..2t+1) and (g + 8, 2t..2t+1) of each m16n8 tile; n % 8 == 0, so a pair
    // is wholly inside or outside.
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            int r = row0 + wm * WM + i * 16 + g;
            int c = col0 + wn * 32 + j * 8 + 2 * t;
            if (c >= n) continue;
            if (r < m) *(unsigned*)(C + (long long)r * n + c) = TT::pack(acc[i][j][0], acc[i][j][1]);
            if (r + 8 < m)
                *(unsigned*)(C + (long long)(r + 8) * n + c) = TT::pack(acc[i][j][2], acc[i][j][3]);
        }
    }
}

#define GEMM_ARGS int m, int n, int k, const u16* __restrict__ A, const u16* __restrict__ B, \
    u16* __restrict__ C

extern "C" __global__ void __launch_bounds__(256) gemm_f16_128(GEMM_ARGS) { gemm<F16, 128>(m, n, k, A, B, C); }
extern "C" __global__ void __launch_bounds__(256) gemm_f16_64(GEMM_ARGS) { gemm<F16, 64>(m, n, k, A, B, C); }
extern "C" __global__ void __launch_bounds__(256) gemm_bf16_128(GEMM_ARGS) { gemm<BF16, 128>(m, n, k, A, B, C); }
extern "C" __global__ void __launch_bounds__(256) gemm_bf16_64(GEMM_ARGS) { gemm<BF16, 64>(m, n, k, A, B, C); }
