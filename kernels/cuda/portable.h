// One kernel source for both vendors (issue 21): kernels/src/cuda/module.rs puts this text in
// front of spmv_csr.cu, features.cu and comm.cu for NVRTC (CUDA) and hiprtc (HIP), so those
// files call the helpers below and never a vendor's warp intrinsic or inline assembly directly.
//
// Warps are 32 lanes on both: an AMD wavefront of 64 runs as two logical warps of 32 (every
// shuffle has width 32 or less, ballots and matches are cut to the logical warp's 32 bits), so
// `threadIdx.x & 31` is the lane and `threadIdx.x >> 5` the warp on both vendors. Blocks are
// multiples of 64 threads (256 everywhere), so a logical warp never straddles two wavefronts
// partially.
//
// Polling flags across GPUs (comm.cu): on NVIDIA the flags are in ordinary device memory, read
// with acquire and written with release at system scope. On AMD a flag a peer writes must live in
// fine-grained (or uncached) memory, e.g. hipExtMallocWithFlags(hipDeviceMallocFinegrained) or
// hipMallocManaged with coherent access, or the poll may never see it; the same release/acquire
// order at system scope is asked for through the clang atomic builtins.

typedef unsigned long long u64;

#if defined(__HIPCC_RTC__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP__)
#define AUGUR_HIP 1
#endif

#ifdef AUGUR_HIP
// ---- AMD (HIP, hiprtc) ------------------------------------------------------------------

// The mask argument is for CUDA only: AMD lanes of a logical warp move in lockstep.
#define WARP_SHFL_DOWN(mask, v, o, w) __shfl_down((v), (o), (w))
#define WARP_SHFL_UP(mask, v, o, w) __shfl_up((v), (o), (w))
#define WARP_SHFL(mask, v, src, w) __shfl((v), (src), (w))

// This lane's logical warp's 32 bits of the wavefront's ballot.
__device__ __forceinline__ unsigned warp_ballot(unsigned mask, int p) {
    (void)mask;
    return (unsigned)(__ballot(p) >> (__lane_id() & 32));
}

// Lanes of `mask` holding the same value as this lane (CUDA's __match_any_sync), by 32 shuffles.
__device__ __forceinline__ unsigned warp_match_any(unsigned mask, unsigned v) {
    unsigned same = 0;
    for (int i = 0; i < 32; ++i) {
        unsigned o = __shfl(v, i, 32);
        if (((mask >> i) & 1u) && o == v) same |= 1u << i;
    }
    return same;
}

// The maximum over the logical warp, in every lane.
__device__ __forceinline__ unsigned warp_reduce_max(unsigned mask, unsigned v) {
    (void)mask;
    for (int o = 16; o > 0; o /= 2) {
        unsigned w = __shfl_xor(v, o, 32);
        v = w > v ? w : v;
    }
    return v;
}

__device__ __forceinline__ void st_release_sys(unsigned* p, unsigned v) {
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}

__device__ __forceinline__ unsigned ld_acquire_sys(const unsigned* p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}

// A 16-byte load that must not come from a stale cache line (peer data): volatile, so the
// compiler neither caches nor merges it; the memory it reads is fine-grained on AMD.
__device__ __forceinline__ uint4 ld_cg(const uint4* p) {
    const volatile unsigned* q = (const volatile unsigned*)p;
    return make_uint4(q[0], q[1], q[2], q[3]);
}
__device__ __forceinline__ uint2 ld_cg(const uint2* p) {
    const volatile unsigned* q = (const volatile unsigned*)p;
    return make_uint2(q[0], q[1]);
}

// One 8-byte volatile store / load of a (data, flag) pair, so a reader sees both or neither.
__device__ __forceinline__ void st_pair_v2(u64 addr, unsigned d, unsigned f) {
    *(volatile u64*)addr = ((u64)f << 32) | d;
}
__device__ __forceinline__ void ld_pair_v2(u64 addr, unsigned& d, unsigned& f) {
    u64 v = *(const volatile u64*)addr;
    d = (unsigned)v;
    f = (unsigned)(v >> 32);
}

// Nanoseconds from the constant-rate wall clock (AUGUR_WALL_MHZ, 100 on MI200 and MI300; the host
// passes the device's rate when it knows it).
#ifndef AUGUR_WALL_MHZ
#define AUGUR_WALL_MHZ 100
#endif
__device__ __forceinline__ u64 now_ns() { return wall_clock64() * (1000ull / AUGUR_WALL_MHZ); }

#define AUGUR_TRAP() __builtin_trap()

// A load that sees what other blocks of the same launch wrote before their fence (CUDA's
// __ldcg: not from this compute unit's L1, which is not coherent across units).
template <typename T>
__device__ __forceinline__ T ld_coherent(const T* p) {
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

#else
// ---- NVIDIA (CUDA, NVRTC) ---------------------------------------------------------------

#define WARP_SHFL_DOWN(mask, v, o, w) __shfl_down_sync((mask), (v), (o), (w))
#define WARP_SHFL_UP(mask, v, o, w) __shfl_up_sync((mask), (v), (o), (w))
#define WARP_SHFL(mask, v, src, w) __shfl_sync((mask), (v), (src), (w))

__device__ __forceinline__ unsigned warp_ballot(unsigned mask, int p) {
    return __ballot_sync(mask, p);
}
__device__ __forceinline__ unsigned warp_match_any(unsigned mask, unsigned v) {
    return __match_any_sync(mask, v);
}
__device__ __forceinline__ unsigned warp_reduce_max(unsigned mask, unsigned v) {
    return __reduce_max_sync(mask, v);
}

__device__ __forceinline__ void st_release_sys(unsigned* p, unsigned v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned ld_acquire_sys(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Loads that bypass L1 (peer data written since the last call must not come from a stale line).
__device__ __forceinline__ uint4 ld_cg(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 ld_cg(const uint2* p) {
    uint2 v;
    asm volatile("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}

__device__ __forceinline__ void st_pair_v2(u64 addr, unsigned d, unsigned f) {
    asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};" ::"l"(addr), "r"(d), "r"(f)
                 : "memory");
}
__device__ __forceinline__ void ld_pair_v2(u64 addr, unsigned& d, unsigned& f) {
    asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];"
                 : "=r"(d), "=r"(f)
                 : "l"(addr)
                 : "memory");
}

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#define AUGUR_TRAP() __trap()

template <typename T>
__device__ __forceinline__ T ld_coherent(const T* p) {
    return __ldcg(p);
}

#endif
