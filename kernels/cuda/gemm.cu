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
// No TMA, clusters or producer/consumer split. Built for other architectures, it traps.
//
// The TMA kernels (persistent, a producer warpgroup and two consumers; their swapped form for
// small M) are gemm_tma.cu's, the fused GEMM + collective kernels gemm_fused.cu's: module.rs
// appends both to this text, one module.

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

