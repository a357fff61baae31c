#!/usr/bin/env python3
"""flashsim.torch on the GPU machine: accuracy, training and speed beside PyTorch's SDPA.

    PYTHONPATH=build/default/python python3 python/tools/torch_gpu_check.py OUT.json [--quick]

(python/tools/torch_gpu_check.sh sets the paths and runs the torch tests first.) Four parts, each
printed as a compact table and written, with the device, PyTorch version and date, to OUT.json:

1. accuracy: O, dQ, dK, dV of flashsim.torch.attention against SDPA (same dtype, PyTorch's choice
   of backend) and against a float64 reference (autograd over the plain math), ‖a − b‖ / ‖b‖, for
   bf16 / fp16, d = 64 / 128, causal or not, N = 1, 77, 1000, 4096. Passes when within 1e-2 (bf16)
   / 5e-3 (fp16) of SDPA, and of float64 within that or 1.5x SDPA's own error.
2. training: a 2-layer causal transformer (d_model 256 with 4 heads of d = 64, and d_model 512 with
   4 heads of d = 128) trained for --steps steps on a fixed set of random token sequences (so the
   loss falls as it memorizes), once with flashsim.torch.attention and once with SDPA, from the same
   initial weights and batches, under bf16 autocast. Passes when the final losses (mean of the last
   20 steps) are within 5 % and the 10-step-smoothed curves within 0.1 nats on average.
3. speed: forward and forward+backward time per call (CUDA events around 5 calls back to back,
   median of 10; also one forward call alone, which adds the host's launch latency) beside SDPA's
   cuDNN backend in the same process, at bench_kernels' shapes: batch = 16384 / N, heads = 2048 / d, N = 4096 and
   16384, d = 64 and 128, full and causal, bf16 (fp16 too with --fp16-timing). TFLOP/s counts
   4·N²·d per head forward and 2.5x that backward, halved under the causal mask.
4. fp8: flashsim.torch.attention_fp8 (its quantize pass included) beside the bf16 op and SDPA's
   cuDNN forward, d = 128, N = 4096 and 16384, 16 heads, full and causal (`--skip fp8` leaves it out).

Exit status 0 when accuracy and training pass (speed is reported, not judged).
"""

import argparse
import copy
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import flashsim.torch as fst

TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}
DT_NAME = {torch.bfloat16: "bf16", torch.float16: "fp16"}


def rel(a, b):
    """‖a − b‖ / ‖b‖, with ‖b‖ floored at 1e-3·sqrt(numel): at N = 1 dQ and dK are exactly 0."""
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-3 * math.sqrt(max(b.numel(), 1)))).item()


# --- 1. accuracy ----------------------------------------------------------------------------------------

def reference(q, k, v, causal, dout):
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    o = torch.softmax(s, dim=-1) @ v
    o.backward(dout.double())
    return o.detach(), q.grad, k.grad, v.grad


def accuracy(quick):
    rows = []
    sizes = [(1, 1, 1), (2, 3, 77), (1, 2, 1000)] + ([] if quick else [(1, 4, 4096)])
    print("\n== accuracy: ||a-b||/||b|| of O, dQ, dK, dV (ours vs SDPA | ours vs float64 | SDPA vs float64) ==")
    print(f"{'dtype':5} {'d':>4} {'causal':>6} {'b,h,N':>10}  {'vs SDPA (o dq dk dv)':>36}  {'ours vs f64':>36}  "
          f"{'SDPA vs f64':>36}  ok")
    for dtype in (torch.bfloat16, torch.float16):
        tol = TOL[dtype]
        for d in (64, 128):
            for causal in (False, True):
                for b, h, n in sizes:
                    g = torch.Generator(device="cuda").manual_seed(1000 * d + n)
                    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g).requires_grad_()
                               for _ in range(3))
                    dout = torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g)
                    o = fst.attention(q, k, v, causal=causal)
                    o.backward(dout)
                    ours = (o.detach(), q.grad, k.grad, v.grad)
                    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
                    o2 = F.scaled_dot_product_attention(q2, k2, v2, is_causal=causal)
                    o2.backward(dout)
                    sdpa = (o2.detach(), q2.grad, k2.grad, v2.grad)
                    ref = reference(q, k, v, causal, dout)
                    e_sdpa = [rel(a, s) for a, s in zip(ours, sdpa)]
                    e_ref = [rel(a, r) for a, r in zip(ours, ref)]
                    e_sdpa_ref = [rel(s, r) for s, r in zip(sdpa, ref)]
                    finite = all(torch.isfinite(t).all().item() for t in ours)
                    ok = finite and all(es <= tol and er <= max(tol, 1.5 * esr)
                                        for es, er, esr in zip(e_sdpa, e_ref, e_sdpa_ref))
                    fmt = lambda xs: " ".join(f"{x:8.1e}" for x in xs)
                    print(f"{DT_NAME[dtype]:5} {d:4} {str(causal):>6} {f'{b},{h},{n}':>10}  {fmt(e_sdpa)}  {fmt(e_ref)}  "
                          f"{fmt(e_sdpa_ref)}  {'ok' if ok else 'FAIL'}", flush=True)
                    rows.append(dict(dtype=DT_NAME[dtype], d=d, causal=causal, batch=b, heads=h, n=n, tol=tol,
                                     vs_sdpa=dict(zip(("o", "dq", "dk", "dv"), e_sdpa)),
                                     vs_f64=dict(zip(("o", "dq", "dk", "dv"), e_ref)),
                                     sdpa_vs_f64=dict(zip(("o", "dq", "dk", "dv"), e_sdpa_ref)),
                                     finite=finite, ok=ok))
    return rows


# --- 2. training ----------------------------------------------------------------------------------------

class Block(nn.Module):
    def __init__(self, d_model, heads, attn):
        super().__init__()
        self.heads, self.attn = heads, attn
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = self.attn(q, k, v)  # (b, heads, n, d), causal
        x = x + self.proj(y.transpose(1, 2).reshape(b, n, c))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, seq, attn):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(seq, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, attn) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab, bias=False)

    def set_attention(self, attn):
        for b in self.blocks:
            b.attn = attn

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def train_curve(model, data, steps, batch, seed):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    g = torch.Generator(device="cpu").manual_seed(seed)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, data.shape[0], (batch,), generator=g)
        x, y = data[idx, :-1], data[idx, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def smooth(xs, w=10):
    return [statistics.fmean(xs[max(0, i - w + 1):i + 1]) for i in range(len(xs))]


def training(steps):
    sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ours = lambda q, k, v: fst.attention(q, k, v, causal=True)
    results = []
    print(f"\n== training: 2-layer causal LM on fixed random tokens, {steps} steps, bf16 autocast ==")
    print(f"{'config':28} {'loss@0':>7} {'ours end':>9} {'SDPA end':>9} {'rel end':>8} {'mean|d|':>8} {'max|d|':>8} "
          f"{'ours s':>7} {'SDPA s':>7}  ok")
    for d_model, heads in ((256, 4), (512, 4)):
        vocab, seq, layers, batch = 512, 256, 2, 16
        torch.manual_seed(0)
        data = torch.randint(0, vocab, (128, seq + 1), device="cuda")
        base = TinyLM(vocab, d_model, heads, layers, seq, sdpa).cuda()
        curves, secs = {}, {}
        for name, attn in (("ours", ours), ("sdpa", sdpa)):
            model = copy.deepcopy(base)
            model.set_attention(attn)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            curves[name] = train_curve(model, data, steps, batch, seed=1)
            torch.cuda.synchronize()
            secs[name] = time.perf_counter() - t0
        a, b = smooth(curves["ours"]), smooth(curves["sdpa"])
        diffs = [abs(x - y) for x, y in zip(a, b)]
        end_a, end_b = statistics.fmean(curves["ours"][-20:]), statistics.fmean(curves["sdpa"][-20:])
        rel_end = abs(end_a - end_b) / end_b
        ok = all(math.isfinite(x) for x in curves["ours"]) and rel_end <= 0.05 and statistics.fmean(diffs) <= 0.1
        name = f"d_model {d_model}, {heads} heads of d={d_model // heads}"
        print(f"{name:28} {curves['sdpa'][0]:7.3f} {end_a:9.4f} {end_b:9.4f} {rel_end:8.2%} {statistics.fmean(diffs):8.4f} "
              f"{max(diffs):8.4f} {secs['ours']:7.1f} {secs['sdpa']:7.1f}  {'ok' if ok else 'FAIL'}", flush=True)
        results.append(dict(d_model=d_model, heads=heads, head_dim=d_model // heads, layers=layers, vocab=vocab, seq=seq,
                            batch=batch, steps=steps, loss_ours=curves["ours"], loss_sdpa=curves["sdpa"],
                            end_ours=end_a, end_sdpa=end_b, rel_end=rel_end, mean_abs_diff=statistics.fmean(diffs),
                            max_abs_diff=max(diffs), seconds_ours=secs["ours"], seconds_sdpa=secs["sdpa"], ok=ok))
    return results


# --- 3. speed -------------------------------------------------------------------------------------------

def median_ms(fn, reps, inner=5):
    """Median over `reps` samples of the time per call of `inner` calls back to back (CUDA events), so
    that the host's work for a call (Python, the op's dispatch) overlaps the GPU's as in a training
    loop; 3 warm-up calls first."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    return statistics.median(times)


def single_call_ms(fn, reps):
    """Median time of one call alone between two events: the GPU time plus the host's launch latency."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def speed(quick, fp16):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    reps = 5 if quick else 10
    print("\n== speed: ms (TFLOP/s), ours vs SDPA cuDNN, same process; batch = 16384/N, heads = 2048/d ==")
    print(f"{'dtype':5} {'d':>4} {'N':>6} {'causal':>6}  {'fwd ours':>16} {'fwd cuDNN':>16} {'x':>5}  "
          f"{'fwd+bwd ours':>16} {'fwd+bwd cuDNN':>16} {'x':>5}  {'1 fwd call ours / cuDNN':>14}")
    dtypes = (torch.bfloat16, torch.float16) if fp16 else (torch.bfloat16,)
    for dtype in dtypes:
        for d in (64, 128):
            for n in ((4096,) if quick else (4096, 16384)):
                for causal in (False, True):
                    b, h = 16384 // n, 2048 // d
                    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
                    g = torch.randn(b, h, n, d, device="cuda", dtype=dtype)
                    flop = 4.0 * n * n * d * b * h * (0.5 if causal else 1.0)
                    res = {}
                    for name in ("ours", "cudnn"):
                        if name == "ours":
                            f = lambda: fst.attention(q, k, v, causal=causal)
                            ctx = None
                        else:
                            f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            ctx = sdpa_kernel(SDPBackend.CUDNN_ATTENTION)

                        def fwd():
                            with torch.no_grad():
                                f()

                        def fwd_bwd():
                            q.grad = k.grad = v.grad = None
                            f().backward(g)

                        try:
                            if ctx is not None:
                                ctx.__enter__()
                            res[name] = (median_ms(fwd, reps), median_ms(fwd_bwd, reps), single_call_ms(fwd, reps))
                        except RuntimeError as e:  # a backend that refuses the shape
                            res[name] = (float("nan"),) * 3
                            print(f"  {name}: {str(e).splitlines()[0]}", file=sys.stderr)
                        finally:
                            if ctx is not None:
                                ctx.__exit__(None, None, None)
                    (fo, fbo, f1o), (fc, fbc, f1c) = res["ours"], res["cudnn"]
                    cell = lambda ms, fl: f"{ms:7.3f} ({fl / ms / 1e9:5.0f})"
                    print(f"{DT_NAME[dtype]:5} {d:4} {n:6} {str(causal):>6}  {cell(fo, flop)} {cell(fc, flop)} {fc / fo:5.2f}  "
                          f"{cell(fbo, 3.5 * flop)} {cell(fbc, 3.5 * flop)} {fbc / fbo:5.2f}  {f1o:6.3f} {f1c:6.3f}",
                          flush=True)
                    rows.append(dict(dtype=DT_NAME[dtype], d=d, n=n, batch=b, heads=h, causal=causal,
                                     fwd_ms_ours=fo, fwd_ms_cudnn=fc, fwd_bwd_ms_ours=fbo, fwd_bwd_ms_cudnn=fbc,
                                     fwd_single_call_ms_ours=f1o, fwd_single_call_ms_cudnn=f1c,
                                     fwd_tflops_ours=flop / fo / 1e9, fwd_tflops_cudnn=flop / fc / 1e9,
                                     fwd_bwd_tflops_ours=3.5 * flop / fbo / 1e9,
                                     fwd_bwd_tflops_cudnn=3.5 * flop / fbc / 1e9,
                                     speedup_fwd=fc / fo, speedup_fwd_bwd=fbc / fbo))
                    q = k = v = g = None  # free before the next shape
                    torch.cuda.empty_cache()
    return rows


def speed_fp8(quick):
    """attention_fp8 (quantize pass included: the op quantizes on every call) beside the bf16 op and
    SDPA's cuDNN backend, forward only, d = 128."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    reps = 5 if quick else 10
    print("\n== FP8 forward: ms (TFLOP/s), quantize pass included; bf16 q, k, v; d = 128, batch = 16384/N, heads = 16 ==")
    print(f"{'N':>6} {'causal':>6}  {'fp8 ours':>16} {'bf16 ours':>16} {'bf16 cuDNN':>16}  {'fp8/cuDNN':>9}")
    d = 128
    for n in ((4096,) if quick else (4096, 16384)):
        for causal in (False, True):
            b, h = 16384 // n, 16
            q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            flop = 4.0 * n * n * d * b * h * (0.5 if causal else 1.0)
            with torch.no_grad():
                t8 = median_ms(lambda: fst.attention_fp8(q, k, v, causal=causal), reps)
                t16 = median_ms(lambda: fst.attention(q, k, v, causal=causal), reps)
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    tc = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), reps)
            cell = lambda ms: f"{ms:7.3f} ({flop / ms / 1e9:5.0f})"
            print(f"{n:6} {str(causal):>6}  {cell(t8)} {cell(t16)} {cell(tc)}  {tc / t8:9.2f}", flush=True)
            rows.append(dict(n=n, d=d, batch=b, heads=h, causal=causal, fp8_ms=t8, bf16_ms_ours=t16, bf16_ms_cudnn=tc,
                             fp8_tflops=flop / t8 / 1e9, speedup_fp8_over_cudnn=tc / t8))
            q = k = v = None
            torch.cuda.empty_cache()
    return rows


def git_commit():
    try:
        root = Path(__file__).resolve().parents[2]
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("out", help="write the results here (JSON)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes (no N = 4096 accuracy, no N = 16384 timing)")
    ap.add_argument("--steps", type=int, default=300, help="training steps per run (default 300)")
    ap.add_argument("--fp16-timing", action="store_true", help="time fp16 too")
    ap.add_argument("--skip", action="append", default=[], choices=["accuracy", "training", "speed", "fp8"])
    args = ap.parse_args()

    reason = fst.unavailable_reason()
    if reason is not None:
        print(f"torch_gpu_check: cannot run: {reason}", file=sys.stderr)
        return 2
    info = dict(device=torch.cuda.get_device_name(), capability=list(torch.cuda.get_device_capability()),
                torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                library=str(fst.library_path()), commit=os.environ.get("FLASHSIM_COMMIT") or git_commit(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                command=" ".join(sys.argv))
    print(f"# {info['device']} (sm_{info['capability'][0]}{info['capability'][1]}), torch {info['torch']}, "
          f"CUDA {info['cuda']}, cuDNN {info['cudnn']}, {info['date']}, commit {info['commit']}")
    print(f"# kernels from {info['library']}")
    out = dict(info=info)
    t0 = time.perf_counter()
    if "accuracy" not in args.skip:
        out["accuracy"] = accuracy(args.quick)
    if "training" not in args.skip:
        out["training"] = training(args.steps)
    if "speed" not in args.skip:
        out["speed"] = speed(args.quick, args.fp16_timing)
    if "fp8" not in args.skip:
        out["speed_fp8"] = speed_fp8(args.quick)
    acc_ok = all(r["ok"] for r in out.get("accuracy", []))
    train_ok = all(r["ok"] for r in out.get("training", []))
    out["pass"] = dict(accuracy=acc_ok, training=train_ok)
    out["seconds"] = time.perf_counter() - t0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"\naccuracy {'PASS' if acc_ok else 'FAIL'}, training {'PASS' if train_ok else 'FAIL'}; "
          f"{out['seconds']:.0f} s; wrote {args.out}")
    return 0 if acc_ok and train_ok else 1


if __name__ == "__main__":
    sys.exit(main())
