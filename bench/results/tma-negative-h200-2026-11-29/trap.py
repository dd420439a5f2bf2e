# What a trapping kernel reports (issue 24: is an illegal instruction a gate that timed out?):
# python3 trap.py MODE (0: __trap(), 1: asm trap, 2: a store to address 0x10), one process each.
import cupy as cp, numpy as np, time, sys
src = r'''
extern "C" __global__ void k(unsigned* rec, int mode) {
    if (threadIdx.x == 0 && blockIdx.x == 3) {
        rec[1] = 7; rec[2] = blockIdx.x; rec[3] = 0xabcd;
        __threadfence_system();
        atomicCAS_system(rec, 0u, 1u);
        __threadfence_system();
        if (mode == 0) __trap();
        if (mode == 1) asm volatile("trap;");
        if (mode == 2) { volatile int* p = (int*)0x10; *p = 1; }
    }
}
'''
mode = int(sys.argv[1])
m = cp.RawModule(code=src)
f = m.get_function('k')
host = cp.cuda.alloc_pinned_memory(64)
arr = np.frombuffer(host, dtype=np.uint32, count=16); arr[:] = 0
dptr = host.ptr  # UVA: a pinned allocation is mapped at its host address
t0 = time.time()
try:
    f((8,), (32,), (np.uint64(dptr), np.int32(mode)))
    cp.cuda.runtime.deviceSynchronize()
    print("no error")
except Exception as e:
    print("mode", mode, "error after %.3f s:" % (time.time()-t0), repr(e))
print("record read by host after the error:", arr[:4])
