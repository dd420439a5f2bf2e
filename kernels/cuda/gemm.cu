// Dense GEMM C = A B^T on tensor cores, for the GEMM + collective overlap patterns (issue 24):
// A [m][k] activations, B [n][k] a linear layer's weight ([out][in], as PyTorch stores it), C
// [m][n], all row-major 16-bit floats (f16 or bf16), f32 accumulation, C rounded to the input
// type. k and n must be multiples of 8 (16-byte chunks; the host checks). Tiles past the matrix
// edges are filled with zeros by cp.async and their outputs not written.
//
// gemm_{f16,bf16}_{128,64}: the Ampere-style kernel (mma.sync): a block of 256 threads (8 warps,
// 2 x 4) computes a BM x 128 tile of C (BM = 128 or 64: each warp BM/2 x 32), walking k in steps
// of 32 through GEMM_STAGES shared-memory stages filled by cp.async, fragments by ldmatrix,
// m16n8k16 products (mma.h).
//
// gemm_wg_{f16,bf16}_{128,256}: Hopper's warpgroup products (wgmma, sm_90a only): a block of two
// warpgroups computes a 128 x BN tile (BN = 128 or 256), each warpgroup 64 x BN with one
// wgmma.m64nBNk16 per 16 of k, both operands read by the tensor cores straight from shared
// memory (128-byte swizzled K-major tiles of 64, filled by cp.async through WG_STAGES stages).
// No TMA, clusters or producer/consumer split yet. Built for other architectures, it traps.

typedef unsigned short u16;

#ifndef GEMM_STAGES
#error "GEMM_STAGES comes from the host as -DGEMM_STAGES=... (kernels/src/cuda/gemm/mod.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef MAX_RANKS
#error "MAX_RANKS comes from the host as -DMAX_RANKS=... (kernels/src/cuda/comm/mod.rs; kernels/src/cuda/module.rs)"
#endif
#ifndef TP_MAX_PIECES
#error "TP_MAX_PIECES comes from the host as -DTP_MAX_PIECES=... (kernels/src/cuda/gemm/tp/ag.rs; kernels/src/cuda/module.rs)"
#endif

#define GEMM_BN 128
#define GEMM_BK 32
#define GEMM_A_ROW (GEMM_BK + 8)  // halves per padded A row (ldmatrix without bank conflicts)

// Shared memory of one stage (halves): the A tile, then the B tile.
template <int BM>
struct GemmSmem {
    static const int A = BM * GEMM_A_ROW;
    static const int B = GEMM_BN * GEMM_A_ROW;
    static const int STAGE = A + B;
};

// Copy the (BM x 32) A tile and the (128 x 32) B tile of step kt into `stage`.
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
    for (int c = threadIdx.x; c < GEMM_BN * (GEMM_BK / 8); c += blockDim.x) {
        int r = c / (GEMM_BK / 8), cc = (c % (GEMM_BK / 8)) * 8;
        int gc = col0 + r, gk = k0 + cc;
        bool v = gc < n && gk < k;
        const u16* src = v ? B + (long long)gc * k + gk : B;
        cp_async16(smem_addr(sb + r * GEMM_A_ROW + cc), src, v);
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
                // B rows are n, k contiguous: the m16n8k16 B fragment ("col") as stored.
                unsigned q[4];
                int r = wn * 32 + j * 16 + (lane & 7) + ((lane >> 4) << 3);
                ldmatrix_x4(q, smem_addr(sb + r * GEMM_A_ROW + kk + ((lane >> 3) & 1) * 8));
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

// ---- Hopper: warpgroup products (wgmma) --------------------------------------------------

#ifndef WG_STAGES
#error "WG_STAGES comes from the host as -DWG_STAGES=... (kernels/src/cuda/gemm/mod.rs; kernels/src/cuda/module.rs)"
#endif

#define WG_BM 128
#define WG_BK 64  // halves: one 128-byte swizzled row per tile row

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define AUGUR_WGMMA 1
#endif

#ifdef AUGUR_WGMMA
// A shared-memory matrix descriptor: a K-major tile of rows of 128 bytes, 128-byte swizzle, 8-row
// groups 1024 bytes apart (the tile's base 1024-byte aligned).
__device__ __forceinline__ unsigned long long wg_desc(const void* p) {
    unsigned long long a = smem_addr(p);
    return ((a & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// One m64nNk16 product per call, accumulating into d (N / 2 floats per thread): the operand
// lists of N = 128 (64 accumulators, then the descriptors at %64, %65 and the scale flag at %66),
// N = 192 (96 accumulators; %96-%98) and N = 256 (128 accumulators; %128-%130); N = 32 and 64 (16
// and 32 accumulators) for the swapped TMA kernel's token tiles; one specialization per type and
// width.
#define WG_REGS_32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define WG_OUTS_32 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define WG_REGS_64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_OUTS_64 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define WG_REGS_128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_OUTS_128 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define WG_REGS_192 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define WG_OUTS_192 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define WG_REGS_256 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define WG_OUTS_256 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define AUGUR_WG_MMA(T, TY, N, DA, DB, ACC)                                                      \
    template <>                                                                                 \
    struct Wg<T, N> {                                                                           \
        __device__ __forceinline__ static void mma(float* d, unsigned long long a,              \
                                                   unsigned long long b, int acc) {             \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #ACC ", 0;\n"                       \
                         "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " "        \
                         WG_REGS_##N ", %" #DA ", %" #DB ", p, 1, 1, 0, 0;\n}\n"                \
                         : WG_OUTS_##N                                                           \
                         : "l"(a), "l"(b), "r"(acc));                                            \
        }                                                                                       \
    };
template <typename TT, int N>
struct Wg;
AUGUR_WG_MMA(F16, "f16", 32, 16, 17, 18)
AUGUR_WG_MMA(BF16, "bf16", 32, 16, 17, 18)
AUGUR_WG_MMA(F16, "f16", 64, 32, 33, 34)
AUGUR_WG_MMA(BF16, "bf16", 64, 32, 33, 34)
AUGUR_WG_MMA(F16, "f16", 128, 64, 65, 66)
AUGUR_WG_MMA(BF16, "bf16", 128, 64, 65, 66)
AUGUR_WG_MMA(F16, "f16", 192, 96, 97, 98)
AUGUR_WG_MMA(BF16, "bf16", 192, 96, 97, 98)
AUGUR_WG_MMA(F16, "f16", 256, 128, 129, 130)
AUGUR_WG_MMA(BF16, "bf16", 256, 128, 129, 130)

// One step of 64 along k for a warpgroup: four m64nNk16 products from the 128-byte swizzled
// tiles at sa (its 64 rows of A) and sb (N rows of B), committed as one group; returns once the
// previous step's group is done (this step's stays in flight).
template <typename TT, int N>
__device__ __forceinline__ void wg_step(float* d, const u16* sa, const u16* sb) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < WG_BK / 16; ++kk) {
        Wg<TT, N>::mma(d, wg_desc(sa + kk * 16), wg_desc(sb + kk * 16), 1);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
}

// The walk over a warpgroup's 64 x N accumulators (N / 2 per thread) at rows row0..,
// columns col0..: put(row, col, x, y) for each pair inside the m x n matrix. Warp w holds rows
// 16 w .. 16 w + 15; register 4 j + e holds (g, 8 j + 2 t + e) for e < 2 and (g + 8, 8 j + 2 t +
// e - 2) otherwise. n % 8 == 0, so a pair is wholly inside or outside.
template <int N, typename Put>
__device__ __forceinline__ void wg_pairs(const float* d, int m, int n, int row0, int col0,
                                         Put put) {
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
    const int g = lane >> 2, t = lane & 3;
    const int r = row0 + w * 16 + g;
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
        int c = col0 + j * 8 + 2 * t;
        if (c >= n) continue;
        if (r < m) put(r, c, d[4 * j], d[4 * j + 1]);
        if (r + 8 < m) put(r + 8, c, d[4 * j + 2], d[4 * j + 3]);
    }
}

// A warpgroup's accumulators into C, rounded to TT.
template <typename TT, int N>
__device__ __forceinline__ void wg_store(const float* d, u16* __restrict__ C, int m, int n,
                                         int row0, int col0) {
    wg_pairs<N>(d, m, n, row0, col0, [&](int r, int c, float x, float y) {
        *(unsigned*)(C + (long long)r * n + c) = TT::pack(x, y);
    });
}

// Copy rows [row0, row0 + R) x k [k0, k0 + 64) of a row-major [rows][k] matrix into a
// swizzled tile: row r's 16-byte chunk c lands at chunk c ^ (r % 8) of its 128-byte row.
template <int R>
__device__ __forceinline__ void wg_load(u16* tile, const u16* __restrict__ M, int rows, int k,
                                        int row0, int k0) {
    for (int c = threadIdx.x; c < R * 8; c += blockDim.x) {
        int r = c >> 3, ch = c & 7;
        int gr = row0 + r, gk = k0 + ch * 8;
        bool v = gr < rows && gk < k;
        const u16* src = v ? M + (long long)gr * k + gk : M;
        cp_async16(smem_addr(tile + r * 64 + ((ch ^ (r & 7)) << 3)), src, v);
    }
}

template <typename TT, int BN>
__device__ __forceinline__ void gemm_wg(int m, int n, int k, const u16* __restrict__ A,
                                        const u16* __restrict__ B, u16* __restrict__ C) {
    extern __shared__ __align__(16) unsigned char wg_raw[];
    // 1024-byte aligned stages (the host asks for 1 KiB more than the stages need).
    u16* smem = (u16*)(wg_raw + ((1024 - (smem_addr(wg_raw) & 1023)) & 1023));
    const int A_TILE = WG_BM * 64, STAGE = (WG_BM + BN) * 64;  // halves
    const int wg = threadIdx.x >> 7;
    const int row0 = blockIdx.y * WG_BM, col0 = blockIdx.x * BN;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
    const int kt_n = (k + WG_BK - 1) / WG_BK;
#pragma unroll
    for (int s = 0; s < WG_STAGES - 1; ++s) {
        if (s < kt_n) {
            wg_load<WG_BM>(smem + s * STAGE, A, m, k, row0, s * WG_BK);
            wg_load<BN>(smem + s * STAGE + A_TILE, B, n, k, col0, s * WG_BK);
        }
        cp_async_commit();
    }
    for (int kt = 0; kt < kt_n; ++kt) {
        cp_async_wait<WG_STAGES - 2>();
        // The tensor cores read shared memory through the async proxy: make this thread's
        // cp.async writes visible to it, then wait for every thread's.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        const int st = kt % WG_STAGES;
        const u16* sa = smem + st * STAGE + wg * 64 * 64;  // this warpgroup's 64 rows
        const u16* sb = smem + st * STAGE + A_TILE;
        // Step kt's products stay in flight while the copies of step kt + STAGES - 1 are issued
        // into the stage of step kt - 1, whose products every warpgroup has finished.
        wg_step<TT, BN>(d, sa, sb);
        __syncthreads();
        int pf = kt + WG_STAGES - 1;
        if (pf < kt_n) {
            int sp = pf % WG_STAGES;
            wg_load<WG_BM>(smem + sp * STAGE, A, m, k, row0, pf * WG_BK);
            wg_load<BN>(smem + sp * STAGE + A_TILE, B, n, k, col0, pf * WG_BK);
        }
        cp_async_commit();
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    cp_async_wait<0>();
    wg_store<TT, BN>(d, C, m, n, row0 + wg * 64, col0);
}
#endif

#define GEMM_ARGS int m, int n, int k, const u16* __restrict__ A, const u16* __restrict__ B, \
    u16* __restrict__ C

extern "C" __global__ void __launch_bounds__(256) gemm_f16_128(GEMM_ARGS) { gemm<F16, 128>(m, n, k, A, B, C); }
extern "C" __global__ void __launch_bounds__(256) gemm_f16_64(GEMM_ARGS) { gemm<F16, 64>(m, n, k, A, B, C); }
extern "C" __global__ void __launch_bounds__(256) gemm_bf16_128(GEMM_ARGS) { gemm<BF16, 128>(m, n, k, A, B, C); }
extern "C" __global__ void __launch_bounds__(256) gemm_bf16_64(GEMM_ARGS) { gemm<BF16, 64>(m, n, k, A, B, C); }

#ifdef AUGUR_WGMMA
#define AUGUR_WG(T, TY, BN) \
    extern "C" __global__ void __launch_bounds__(256) gemm_wg_##TY##_##BN(GEMM_ARGS) { \
        gemm_wg<T, BN>(m, n, k, A, B, C);                                          \
    }
#else
#define AUGUR_WG(T, TY, BN) \
    extern "C" __global__ void gemm_wg_##TY##_##BN(GEMM_ARGS) { __trap(); }
#endif
AUGUR_WG(F16, f16, 128)
AUGUR_WG(BF16, bf16, 128)
AUGUR_WG(F16, f16, 256)
AUGUR_WG(BF16, bf16, 256)

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

// The loop of the tensor-memory stores below: BOXES boxes of 64 rows x 128 bytes, each filled
// by the warpgroup (`fill(b, buf, r, t)`: this thread's rows r and r + 8 of the box, its lane's
// t = lane % 4) into one of its two staging buffers (8 KiB each,
// 128-byte swizzled like the tensor maps: a row's 16-byte chunk j lands at j ^ (row % 8), so a
// warp's stores hit 8 different bank groups), then stored (with ADD, added to what the
// destination holds: a tensor-memory reduction) by one thread at columns col0 + b x BOX_COLS
// with cp.async.bulk.tensor, which clips at the matrix edges. The stores run on while the
// warpgroup goes on to its next unit; a buffer is refilled only once the store from it two boxes
// before has read it, and the kernel waits for its stores at the end.
// One tensor-memory store of the staging box at `buf` to (row0, col0) of the matrix `tmc` maps
// (with ADD, added to what it holds: a reduction), committed as its own bulk group.
template <bool ADD>
__device__ __forceinline__ void tma_store_box(const TensorMap* tmc, int col0, int row0,
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
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

template <int BOXES, int BOX_COLS, bool ADD, typename Fill>
__device__ __forceinline__ void wg_tma_boxes(u16* stage, const TensorMap* tmc, int row0, int col0,
                                             int bar_id, Fill fill) {
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3;
    const int r = w * 16 + (lane >> 2), t = lane & 3;
    const bool lead = (threadIdx.x & 127) == 0;
#pragma unroll
    for (int b = 0; b < BOXES; ++b) {
        u16* buf = stage + (b & 1) * 64 * 64;
        if (lead) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
        fill(b, buf, r, t);
        // The tensor-memory store reads shared memory through the async proxy.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync %0, 128;" ::"r"(bar_id) : "memory");
        if (lead) tma_store_box<ADD>(tmc, col0 + b * BOX_COLS, row0, buf);
    }
}

// A warpgroup's 64 x N accumulators into C (with ADD, added to what C holds, in the 16-bit type:
// fused-reduce:0, the owner's rows of the sum) in 64-column boxes, each rounded to TT
// (wg_tma_boxes). Register 4 q + e's pair (row r or r + 8, columns 8 j + 2 t of box c, q = 8 c +
// j) lies in 16-byte chunk j of its row, half 2 t in it.
template <typename TT, int N, bool ADD = false>
__device__ __forceinline__ void wg_store_tma(const float* d, u16* stage, const TensorMap* tmc,
                                             int row0, int col0, int bar_id) {
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
    });
}

// A warpgroup's 64 x N f32 accumulators added into an f32 matrix (fused-reduce:0:K: the owner's
// f32 sum) by tensor-memory reductions through `tmc`, a map of 32 x 64 f32 boxes (128 bytes a
// row, swizzled alike): wg_tma_boxes with 32-column boxes, each staging buffer one 64 x 32 f32
// box. Register 4 q + e's pair (columns 8 j + 2 t of 64-column chunk c, q = 8 c + j) lies in box
// 2 c + j / 4 at column 8 (j % 4) + 2 t: 16-byte chunk 2 (j % 4) + t / 2 of its row, float
// 2 (t % 2) in it.
template <int N>
__device__ __forceinline__ void wg_add_tma_f32(const float* d, u16* stage, const TensorMap* tmc,
                                               int row0, int col0, int bar_id) {
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
    });
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
