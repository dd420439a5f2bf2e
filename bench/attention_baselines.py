#!/usr/bin/env python3
"""Outside baselines for augur's decode attention, timed the way augur times its schedules
(issue 17): PyTorch SDPA and FlashAttention-2's varlen kernel on the same shapes.

- `fa2_varlen`: `torch.ops.aten._flash_attention_forward` with cu_seqlens (PyTorch's build of
  FlashAttention-2): the ragged batch packed without padding, GQA native. It takes no block table,
  so paged shapes run on their contiguous packing (augur's paged rows read through the table).
- `sdpa`: `torch.nn.functional.scaled_dot_product_attention` on the batch padded to its longest
  sequence with a boolean mask (what a user of SDPA does without a varlen or paged kernel).

Each baseline is checked on the first non-empty sequence against a float32 reference, then timed
in three modes, as augur's `time_modes`: latency (one call between two events from an idle stream,
Python and dispatcher time included, median of 20), throughput (as many calls as last ~0.5 ms,
at most 64, back to back between two events; per call = total / calls; median of 10 samples) and
graph (the same calls captured once in a torch.cuda.CUDAGraph and replayed; median of 10).
`median_s` is the throughput figure, as in augur's attention runs. Usage on the GPU machine:

    python3 bench/attention_baselines.py --file grid.txt > baselines.csv

CSV: shape,baseline,median_s,latency_s,graph_s,batch,live_kv_bytes,status,check_max_error
"""
import math
import sys

import torch

TARGET_S = 500e-6
MAX_BATCH = 64
# Padded K and V larger than this are not tried for SDPA (a skewed batch pads every sequence to
# the longest).
PADDED_LIMIT = 40e9
BOUND = 2e-2


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


def event_pair():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def times(f):
    """(latency, throughput, graph or None, batch), seconds per call."""
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    lat = []
    for _ in range(20):
        a, z = event_pair()
        a.record()
        f()
        z.record()
        z.synchronize()
        lat.append(a.elapsed_time(z) * 1e-3)
    latency = sorted(lat)[len(lat) // 2]
    batch = max(1, min(MAX_BATCH, math.ceil(TARGET_S / max(latency, 1e-9))))
    tp = []
    for _ in range(10):
        a, z = event_pair()
        a.record()
        for _ in range(batch):
            f()
        z.record()
        z.synchronize()
        tp.append(a.elapsed_time(z) * 1e-3 / batch)
    throughput = sorted(tp)[len(tp) // 2]
    graph = None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                f()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(batch):
                f()
        g.replay()
        torch.cuda.synchronize()
        gr = []
        for _ in range(10):
            a, z = event_pair()
            a.record()
            g.replay()
            z.record()
            z.synchronize()
            gr.append(a.elapsed_time(z) * 1e-3 / batch)
        graph = sorted(gr)[len(gr) // 2]
        del g
    except Exception as e:  # a call that cannot be captured: no graph figure
        print(f"graph capture failed: {e}", file=sys.stderr)
        torch.cuda.synchronize()
    return latency, throughput, graph, batch


def reference(q, k, v, hq, hk):
    """float32 attention of one query (hq, d) over k, v (n, hk, d)."""
    g = hq // hk
    qf, kf, vf = q.float(), k.float(), v.float()
    kf = kf.repeat_interleave(g, dim=1)  # (n, hq, d)
    vf = vf.repeat_interleave(g, dim=1)
    s = torch.einsum("hd,nhd->hn", qf, kf) / math.sqrt(q.shape[-1])
    p = torch.softmax(s, dim=-1)
    return torch.einsum("hn,nhd->hd", p, vf)


def run(spec, out):
    s = parse(spec)
    lens, hq, hk, d, dt = s["lens"], s["q_heads"], s["kv_heads"], s["head_dim"], s["dtype"]
    b, total = len(lens), sum(lens)
    live = 2 * total * hk * d * torch.tensor([], dtype=dt).element_size()
    dev = "cuda"
    gen = torch.Generator(device=dev).manual_seed(1)
    q = torch.randn(b, hq, d, device=dev, dtype=dt, generator=gen)
    k = torch.randn(max(total, 1), hk, d, device=dev, dtype=dt, generator=gen)
    v = torch.randn(max(total, 1), hk, d, device=dev, dtype=dt, generator=gen)
    starts = [0]
    for n in lens:
        starts.append(starts[-1] + n)
    first = next((i for i, n in enumerate(lens) if n > 0), None)
    want = None
    if first is not None:
        a0, a1 = starts[first], starts[first + 1]
        want = reference(q[first], k[a0:a1], v[a0:a1], hq, hk)

    def emit(name, f, check):
        try:
            err = None
            if want is not None:
                got = check()
                err = (got.float() - want).abs().max().item()
                if not (err <= BOUND):
                    out.write(f'"{spec}",{name},,,,,{live},wrong result: max error {err:.3e},{err:.3e}\n')
                    return
            lat, tp, gr, batch = times(f)
            gs = "" if gr is None else f"{gr:.9e}"
            es = "" if err is None else f"{err:.3e}"
            out.write(f'"{spec}",{name},{tp:.9e},{lat:.9e},{gs},{batch},{live},ok,{es}\n')
        except torch.cuda.OutOfMemoryError:
            out.write(f'"{spec}",{name},,,,,{live},out of memory,\n')
            torch.cuda.empty_cache()
        except Exception as e:  # report and go on with the next baseline
            msg = str(e).splitlines()[0].replace('"', "'").replace(",", ";")[:200]
            out.write(f'"{spec}",{name},,,,,{live},failed: {msg},\n')
        out.flush()

    # FlashAttention-2 varlen: q (b, hq, d) as b sequences of one token; k, v packed.
    if total > 0:
        cu_q = torch.arange(b + 1, device=dev, dtype=torch.int32)
        cu_k = torch.tensor(starts, device=dev, dtype=torch.int32)
        mk = max(lens)
        fa = lambda: torch.ops.aten._flash_attention_forward(
            q, k, v, cu_q, cu_k, 1, mk, 0.0, False, False
        )[0]
        emit("fa2_varlen", fa, lambda: fa()[first])
    else:
        out.write(f'"{spec}",fa2_varlen,,,,,{live},no tokens,\n')

    # SDPA on the padded batch with a mask.
    L = max(max(lens), 1)
    padded = 2 * b * L * hk * d * torch.tensor([], dtype=dt).element_size()
    if padded > PADDED_LIMIT:
        out.write(f'"{spec}",sdpa,,,,,{live},padded K and V of {padded / 1e9:.0f} GB not tried,\n')
        return
    kp = torch.zeros(b, hk, L, d, device=dev, dtype=dt)
    vp = torch.zeros(b, hk, L, d, device=dev, dtype=dt)
    for i, n in enumerate(lens):
        if n:
            kp[i, :, :n] = k[starts[i]:starts[i + 1]].transpose(0, 1)
            vp[i, :, :n] = v[starts[i]:starts[i + 1]].transpose(0, 1)
    lt = torch.tensor(lens, device=dev)
    mask = (torch.arange(L, device=dev)[None, :] < lt[:, None])[:, None, None, :]
    q4 = q[:, :, None, :]
    sd = lambda: torch.nn.functional.scaled_dot_product_attention(
        q4, kp, vp, attn_mask=mask, enable_gqa=(hq != hk)
    )
    emit("sdpa", sd, lambda: sd()[first, :, 0, :])
    del kp, vp, mask


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--file"]:
        args = [l.strip() for l in open(args[1]) if l.strip()] + args[2:]
    out = sys.stdout
    out.write("shape,baseline,median_s,latency_s,graph_s,batch,live_kv_bytes,status,check_max_error\n")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}", file=sys.stderr)
    for spec in args:
        try:
            run(spec, out)
        except torch.cuda.OutOfMemoryError:
            out.write(f'"{spec}",all,,,,,,out of memory,\n')
        torch.cuda.empty_cache()
        out.flush()
