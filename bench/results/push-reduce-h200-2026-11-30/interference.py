#!/usr/bin/env python3
"""Issue 24: does traffic through GPU 0's memory system slow a GEMM on GPU 0?

`fused-all` on two GPUs runs 1.24-1.69x the same launch on one GPU (one GPU's share of k, no
peer; bench/results/fused-all-link-h200-2026-11-30/), and neither its staging (three buffers)
nor its stores' waits (deferred flush) nor the tensor-memory unit's share of the remote stores
(lsu.diff) explains it. This asks the next suspect directly, with no augur code: cuBLAS's GEMM
(torch, bf16, one GPU's share of k of a layer) timed on GPU 0 alone and while other traffic
runs beside it, started before the GEMMs and lasting past them:

- `ce-in`:  GPU 1's copy engines writing into GPU 0's memory (peer copies, no SMs of GPU 0);
- `ce-out`: GPU 0's copy engines writing into GPU 1's memory;
- `ce-both`: both;
- `red-in`: a kernel on GPU 1 adding 16-byte bf16x2 vectors into GPU 0's memory
  (red.global.add.noftz.v4.bf16x2, what `fused-all`'s peer does to this GPU's sum);
- `red-in+ce-out`: that and GPU 0's copy engines writing out.

CSV on stdout: m, n, k (the GEMM's: one GPU's half of the layer's k), mode, us per GEMM (median
of SAMPLES timed samples of R back-to-back GEMMs; with ROUNDS > 1 the best of that many rounds,
the modes alternating in order), its ratio to `none`, and the traffic's rate alone (GB/s,
measured first). Needs two GPUs, torch and CuPy. interference.csv: ROUNDS=1 (the default).
"""

import os
import statistics
import sys

import cupy as cp
import torch

LAYERS = [
    (1024, 4096, 4096),
    (2048, 5120, 5120),
    (4096, 5120, 5120),
    (4096, 8192, 8192),
    (8192, 4096, 14336),
    (16384, 5120, 5120),
    (16384, 8192, 8192),
]
R = 20
SAMPLES = 7
ROUNDS = int(os.environ.get("ROUNDS", "1"))
BYTES = 256 << 20

RED = r"""
extern "C" __global__ void red_in(unsigned int* dst, unsigned long long words, int iters) {
    unsigned long long n4 = words / 4;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned int v = 0x3c003c00u;  // bf16x2 (2^-7, 2^-7)
    for (int it = 0; it < iters; ++it)
        for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
             i < n4; i += stride)
            asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};"
                         :: "l"(dst + 4 * i), "r"(v), "r"(v), "r"(v), "r"(v) : "memory");
}
"""


def enable_peers():
    for d, p in ((0, 1), (1, 0)):
        with cp.cuda.Device(d):
            try:
                cp.cuda.runtime.deviceEnablePeerAccess(p)
            except cp.cuda.runtime.CUDARuntimeError as e:
                if "ALREADY" not in str(e).upper():
                    raise


class Traffic:
    def __init__(self):
        with cp.cuda.Device(0):
            self.dst0 = cp.zeros(BYTES // 4, dtype=cp.uint32)
            self.src0 = cp.full(BYTES // 4, 0x3C003C00, dtype=cp.uint32)
            self.s0 = cp.cuda.Stream(non_blocking=True)
        with cp.cuda.Device(1):
            self.dst1 = cp.zeros(BYTES // 4, dtype=cp.uint32)
            self.src1 = cp.full(BYTES // 4, 0x3C003C00, dtype=cp.uint32)
            self.s1 = cp.cuda.Stream(non_blocking=True)
            self.red = cp.RawKernel(RED, "red_in")
            self.sms = cp.cuda.runtime.getDeviceProperties(1)["multiProcessorCount"]
        self.rate = {}

    def ce_in(self, n):
        with cp.cuda.Device(1):
            for _ in range(n):
                cp.cuda.runtime.memcpyPeerAsync(
                    self.dst0.data.ptr, 0, self.src1.data.ptr, 1, BYTES, self.s1.ptr
                )

    def ce_out(self, n):
        with cp.cuda.Device(0):
            for _ in range(n):
                cp.cuda.runtime.memcpyPeerAsync(
                    self.dst1.data.ptr, 1, self.src0.data.ptr, 0, BYTES, self.s0.ptr
                )

    def red_in(self, n):
        with cp.cuda.Device(1):
            self.red(
                (self.sms * 4,),
                (512,),
                (self.dst0.data.ptr, cp.uint64(BYTES // 4), cp.int32(n)),
                stream=self.s1,
            )

    def sync(self):
        self.s0.synchronize()
        self.s1.synchronize()

    def measure(self, name, run, dev, stream, n=4):
        """GB/s of `run(n)` alone (each unit moves BYTES)."""
        run(1)
        self.sync()
        with cp.cuda.Device(dev):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(stream)
            run(n)
            b.record(stream)
            b.synchronize()
            ms = cp.cuda.get_elapsed_time(a, b)
        self.rate[name] = n * BYTES / (ms * 1e-3) / 1e9
        return ms / n


def gemm_us(a, w, out, traffic=()):
    """Median us per GEMM of SAMPLES samples of R GEMMs on GPU 0, each sample with `traffic`
    (pairs of a callable taking a count of BYTES units and that count) started first."""
    times = []
    stream = torch.cuda.current_stream(0)
    for _ in range(SAMPLES):
        for run, units in traffic:
            run(units)
        # Let the traffic start before the first GEMM.
        torch.cuda._sleep(100_000)
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record(stream)
        for _ in range(R):
            torch.matmul(a, w.t(), out=out)
        e1.record(stream)
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3 / R)
        T.sync()
    return statistics.median(times)


if __name__ == "__main__":
    enable_peers()
    torch.cuda.set_device(0)
    T = Traffic()
    ms_ce = T.measure("ce-in", T.ce_in, 1, T.s1)
    ms_out = T.measure("ce-out", T.ce_out, 0, T.s0)
    ms_red = T.measure("red-in", T.red_in, 1, T.s1, n=1)
    print(
        "traffic alone: "
        + ", ".join(f"{k} {v:.0f} GB/s" for k, v in T.rate.items()),
        file=sys.stderr,
    )
    ce_in, ce_out, red_in = (T.ce_in, ms_ce), (T.ce_out, ms_out), (T.red_in, ms_red)
    modes = {
        "none": [],
        "ce-in": [ce_in],
        "ce-out": [ce_out],
        "ce-both": [ce_in, ce_out],
        "red-in": [red_in],
        "red-in+ce-out": [red_in, ce_out],
    }
    print("m,n,k,mode,us,over_none,traffic_gbps")
    for m, n, k in LAYERS:
        kh = k // 2
        g = torch.Generator(device="cuda:0").manual_seed(m + n + k)
        a = torch.randn(m, kh, device="cuda:0", dtype=torch.bfloat16, generator=g)
        wt = torch.randn(n, kh, device="cuda:0", dtype=torch.bfloat16, generator=g)
        out = torch.empty(m, n, device="cuda:0", dtype=torch.bfloat16)
        for _ in range(10):
            torch.matmul(a, wt.t(), out=out)
        torch.cuda.synchronize(0)
        base = gemm_us(a, wt, out)
        # Traffic units to outlast a sample's GEMMs three times over (plus the sleep).
        window_ms = 3 * (R * base * 1e-3) + 1.0
        # ROUNDS rounds, the modes in turn, every other round in reverse order; the best of the
        # rounds per mode (ROUNDS=1, the default: one round in the table's order, the GEMM alone
        # first, as interference.csv was made).
        best = {}
        for r in range(ROUNDS):
            order = list(modes.items())
            for mode, runs in order if r % 2 == 0 else reversed(order):
                traffic = [(run, max(1, int(window_ms / per) + 1)) for run, per in runs]
                if r == 0 and mode == "none":
                    us = base
                else:
                    us = gemm_us(a, wt, out, traffic)
                best[mode] = min(best.get(mode, us), us)
        for mode in modes:
            us = best[mode]
            parts = ["ce-in", "ce-out"] if mode == "ce-both" else mode.split("+")
            rate = "+".join(f"{T.rate[x]:.0f}" for x in parts if x in T.rate)
            print(f"{m},{n},{kh},{mode},{us:.2f},{us / best['none']:.3f},{rate}", flush=True)
