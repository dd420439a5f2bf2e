# Is a tensor-memory store / reduction at a negative row coordinate legal on Hopper? (b1's later
# owners were added by cp.reduce.async.bulk.tensor at row tok0 - q * rows < 0.)
# python3 tmaneg.py store|reduce ROW ROWS: one 32 x 64 bf16 box (row r of the box holds r + 1) stored
# or added at column 64 and row ROW of a ROWS x 4096 tensor map (augur's maps: 128-byte swizzle).
import ctypes, sys, time
import cupy as cp, numpy as np
mode, row0, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
src = r'''
extern "C" __global__ void k(const unsigned long long* map, int col0, int row0, int add) {
    extern __shared__ __align__(1024) unsigned char raw[];
    unsigned short* s = (unsigned short*)(((unsigned long long)raw + 1023) & ~1023ull);
    // box of 32 rows x 64 bf16: row r holds bf16(r + 1) everywhere (the swizzle moves 16-byte
    // chunks within a row, so every value of a row stays that row's)
    for (int i = threadIdx.x; i < 32 * 64; i += blockDim.x) {
        float v = (float)(i / 64 + 1);
        s[i] = (unsigned short)(__float_as_uint(v) >> 16);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned sa = (unsigned)__cvta_generic_to_shared(s);
        if (add) asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];" :: "l"(map), "r"(col0), "r"(row0), "r"(sa) : "memory");
        else asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" :: "l"(map), "r"(col0), "r"(row0), "r"(sa) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
'''
n = 4096
buf = cp.zeros((rows, n), dtype=cp.uint16)
cuda = ctypes.CDLL("libcuda.so.1")
tm = (ctypes.c_uint64 * 16)()
dims = (ctypes.c_uint64 * 2)(n, rows)
strides = (ctypes.c_uint64 * 1)(n * 2)
box = (ctypes.c_uint32 * 2)(64, 32)
el = (ctypes.c_uint32 * 2)(1, 1)
# BFLOAT16 = 9, interleave none 0, swizzle 128B = 3, L2 256B = 3, OOB fill none 0
r = cuda.cuTensorMapEncodeTiled(tm, 9, 2, ctypes.c_void_p(buf.data.ptr), dims, strides, box, el, 0, 3, 3, 0)
print("encode", r)
dmap = cp.asarray(np.frombuffer(bytes(tm), dtype=np.uint64))
m = cp.RawModule(code=src, options=("--gpu-architecture=sm_90a",))
f = m.get_function("k")
f.max_dynamic_shared_size_bytes = 8192
t0 = time.time()
try:
    f((1,), (128,), (dmap, np.int32(64), np.int32(row0), np.int32(mode == "reduce")), shared_mem=8192)
    cp.cuda.runtime.deviceSynchronize()
    h = buf.get()
    vals = (h[:, 64].astype(np.uint32) << 16).view(np.float32)
    print(mode, "row", row0, "rows", rows, "OK; column 64 of each row:", vals.tolist(), "col 0:", int(h[:, 0].max()))
except Exception as e:
    print(mode, "row", row0, "rows", rows, "ERROR after %.2f s: %r" % (time.time() - t0, e))
