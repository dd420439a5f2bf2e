#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention on decode shapes, the outside reference of issue 8.

Ragged batches are padded to the longest sequence with a boolean mask (what a user of SDPA does
without a paged kernel); the time and the KV bytes actually live (not padded) are reported, so
the bandwidth is comparable with augur's schedules. Usage on the GPU machine:

    python3 bench/attention_sdpa.py 'attention:q_heads=32,kv_heads=8,head_dim=128,dtype=bf16,lens=4096*8' ... > sdpa.csv
    python3 bench/attention_sdpa.py --file grid.txt > sdpa.csv

Median of 20 timed calls (CUDA events) after 5 warm-up calls.
"""
import sys

import torch


def parse(spec):
    assert spec.startswith("attention:"), spec
    kv = dict(p.split("=", 1) for p in spec[len("attention:"):].split(","))
    lens = []
    for item in kv["lens"].split(";"):
        n, _, times = item.partition("*")
        lens += [int(float(n))] * int(times or 1)
    q_heads = int(kv["q_heads"])
    return dict(
        q_heads=q_heads,
        kv_heads=int(kv.get("kv_heads", q_heads)),
        head_dim=int(kv.get("head_dim", 128)),
        dtype={"f16": torch.float16, "bf16": torch.bfloat16}[kv.get("dtype", "bf16")],
        lens=lens,
    )


def run(spec):
    s = parse(spec)
    b, hq, hk, d = len(s["lens"]), s["q_heads"], s["kv_heads"], s["head_dim"]
    L = max(max(s["lens"]), 1)
    dev = "cuda"
    q = torch.randn(b, hq, 1, d, device=dev, dtype=s["dtype"])
    k = torch.randn(b, hk, L, d, device=dev, dtype=s["dtype"])
    v = torch.randn(b, hk, L, d, device=dev, dtype=s["dtype"])
    lens = torch.tensor(s["lens"], device=dev)
    mask = (torch.arange(L, device=dev)[None, :] < lens[:, None])[:, None, None, :]
    f = lambda: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, enable_gqa=(hq != hk)
    )
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        z.record()
        z.synchronize()
        times.append(a.elapsed_time(z) * 1e-3)
    t = sorted(times)[len(times) // 2]
    live = 2 * sum(s["lens"]) * hk * d * q.element_size()
    print(f'"{spec}",{t:.9f},{live},{live / t / 1e9:.1f},ok')
    del q, k, v, mask


# Padded K and V larger than this are not tried (a skewed batch pads every sequence to the longest).
PADDED_LIMIT = 40e9


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--file"]:
        args = [l.strip() for l in open(args[1]) if l.strip()] + args[2:]
    print("shape,median_s,live_kv_bytes,live_gb_per_s,status")
    for spec in args:
        s = parse(spec)
        padded = 2 * len(s["lens"]) * max(s["lens"]) * s["kv_heads"] * s["head_dim"] * 2
        if padded > PADDED_LIMIT:
            print(f'"{spec}",,,,padded K and V of {padded / 1e9:.0f} GB not tried')
            continue
        try:
            run(spec)
        except torch.cuda.OutOfMemoryError as e:
            print(f'"{spec}",,,,out of memory')
            torch.cuda.empty_cache()
