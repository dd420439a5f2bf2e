// Tensor-core helpers shared by attention.cu and gemm.cu (NVIDIA only: inline PTX for sm_80+):
// kernels/src/cuda/module.rs puts this text in front of each of those sources.

// The input types: two floats packed as one 32-bit register of two halves (lo, hi), and the
// tensor-core product D = A B + C of m16n8k16 (A: 4 registers, B: 2, C/D: 4 floats).
#define AUGUR_MMA_TYPE(NAME, TY)                                                              \
    struct NAME {                                                                             \
        __device__ static unsigned pack(float lo, float hi) {                                 \
            unsigned r;                                                                       \
            asm("cvt.rn." TY "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));              \
            return r;                                                                         \
        }                                                                                     \
        __device__ static void mma(float* d, const unsigned* a, unsigned b0, unsigned b1) {  \
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 "           \
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"     \
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                     \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));    \
        }                                                                                     \
    };
AUGUR_MMA_TYPE(F16, "f16")
AUGUR_MMA_TYPE(BF16, "bf16")

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared, asynchronously; zeros when `valid` is false.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

