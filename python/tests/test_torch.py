"""flashsim.torch: the fast attention op against PyTorch's SDPA and a float64 reference.

Skips (with the reason) where there is no PyTorch, no CUDA device, no sm_90 GPU or no
libflashsim_attention_abi.so; with FLASHSIM_REQUIRE_ABI=1 (python/tools/torch_gpu_check.sh sets it)
a missing library or GPU is a failure instead. Uses only unittest.SkipTest, so it also runs without
pytest: `python3 python/tests/test_torch.py`.
"""

import math
import os
import sys
import unittest

try:
    import torch
except ImportError:  # pragma: no cover - the CPU machines
    torch = None

REQUIRE = os.environ.get("FLASHSIM_REQUIRE_ABI") == "1"
# ‖a − b‖ / ‖b‖ within these of SDPA (bench_kernels' tolerances)
TOL = {"bfloat16": 1e-2, "float16": 5e-3}


def _fst():
    if torch is None:
        raise unittest.SkipTest("PyTorch is not installed")
    import flashsim.torch as fst
    return fst


def _need_gpu():
    fst = _fst()
    reason = fst.unavailable_reason()
    if reason is not None:
        if REQUIRE:
            raise AssertionError(f"FLASHSIM_REQUIRE_ABI=1 but: {reason}")
        raise unittest.SkipTest(reason)
    return fst


def rel(a, b):
    """‖a − b‖ / ‖b‖, with ‖b‖ floored at 1e-3·sqrt(numel): at N = 1 dQ and dK are exactly 0."""
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-3 * math.sqrt(max(b.numel(), 1)))).item()


def reference(q, k, v, causal, dout):
    """float64 attention and its gradients (autograd over the math)."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    o = torch.softmax(s, dim=-1) @ v
    o.backward(dout.double())
    return o.detach(), q.grad, k.grad, v.grad


def run_both(fst, b, h, n, d, dtype, causal, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g).requires_grad_() for _ in range(3))
    dout = torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g)
    o = fst.attention(q, k, v, causal=causal)
    o.backward(dout)
    ours = (o.detach(), q.grad, k.grad, v.grad)
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    o2 = torch.nn.functional.scaled_dot_product_attention(q2, k2, v2, is_causal=causal)
    o2.backward(dout)
    sdpa = (o2.detach(), q2.grad, k2.grad, v2.grad)
    return (q, k, v, dout), ours, sdpa


# --- without a GPU: the checks that need only PyTorch -------------------------------------------------

def test_import_without_library_is_fine():
    fst = _fst()
    assert callable(fst.attention)
    assert "SDPA" in fst.attention.__doc__ or "scaled_dot_product_attention" in fst.attention.__doc__


def test_errors_before_any_kernel():
    fst = _fst()
    x = torch.zeros(1, 1, 8, 64, dtype=torch.bfloat16)
    for bad, exc, words in [
        ((x, x, x), ValueError, "CUDA"),  # CPU tensors
        ((x.double(),) * 3, TypeError, "bfloat16"),
        ((x.to(torch.int32),) * 3, TypeError, "dtype"),
        ((x, x.half(), x), TypeError, "one dtype"),
    ]:
        try:
            fst.attention(*bad)
        except exc as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError(f"no {exc.__name__} for {[t.dtype for t in bad]} {[t.device for t in bad]}")


# --- on an H100 / H200 -------------------------------------------------------------------------------

def test_head_dim_and_shape_errors():
    fst = _need_gpu()
    q = torch.zeros(1, 2, 16, 96, device="cuda", dtype=torch.bfloat16)
    try:
        fst.attention(q, q, q)
    except ValueError as e:
        assert "64 or 128" in str(e)
    else:
        raise AssertionError("d = 96 accepted")
    q = torch.zeros(1, 2, 16, 64, device="cuda", dtype=torch.bfloat16)
    k = torch.zeros(1, 2, 32, 64, device="cuda", dtype=torch.bfloat16)
    try:
        fst.attention(q, k, k)
    except ValueError as e:
        assert "one shape" in str(e)
    else:
        raise AssertionError("different lengths accepted")


def test_matches_sdpa_and_float64():
    fst = _need_gpu()
    failures = []
    for dtype in (torch.bfloat16, torch.float16):
        tol = TOL[str(dtype).split(".")[-1]]
        for d in (64, 128):
            for causal in (False, True):
                for b, h, n in ((1, 1, 1), (2, 3, 77), (1, 2, 1000), (1, 2, 1024)):
                    (q, k, v, dout), ours, sdpa = run_both(fst, b, h, n, d, dtype, causal)
                    ref = reference(q, k, v, causal, dout)
                    for name, a, s, r in zip(("o", "dq", "dk", "dv"), ours, sdpa, ref):
                        e_sdpa, e_ref, e_sdpa_ref = rel(a, s), rel(a, r), rel(s, r)
                        # within tol of SDPA, and of float64 no worse than tol (or than SDPA itself, x1.5)
                        if not (e_sdpa <= tol and e_ref <= max(tol, 1.5 * e_sdpa_ref)):
                            failures.append(f"{dtype} d={d} causal={causal} b,h,n={b},{h},{n} {name}: "
                                            f"vs SDPA {e_sdpa:.2e}, vs f64 {e_ref:.2e} (SDPA vs f64 {e_sdpa_ref:.2e})")
    assert not failures, "\n".join(failures)


def test_noncontiguous_3d_and_scale():
    fst = _need_gpu()
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(2, 100, 4, 3 * 64, device="cuda", dtype=torch.bfloat16, generator=g)  # (b, n, h, 3d)
    q, k, v = (t.transpose(1, 2) for t in x.split(64, dim=-1))  # (b, h, n, d), non-contiguous views
    assert not q.is_contiguous()
    o = fst.attention(q, k, v, causal=True)
    o_c = fst.attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True)
    assert torch.equal(o, o_c)
    o3 = fst.attention(*(t.reshape(8, 100, 64) for t in (q, k, v)), causal=True)
    assert torch.equal(o3.reshape(2, 4, 100, 64), o)
    s = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3)
    assert rel(fst.attention(q, k, v, scale=0.3), s) < TOL["bfloat16"]


def test_empty_and_stream():
    fst = _need_gpu()
    q = torch.zeros(2, 3, 0, 64, device="cuda", dtype=torch.float16, requires_grad=True)
    o = fst.attention(q, q, q)
    assert o.shape == q.shape
    g = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn(1, 2, 512, 128, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        o_side = fst.attention(q, k, v)
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(o_side, fst.attention(q, k, v))


def test_opcheck():
    _need_gpu()  # registers the ops
    g = torch.Generator(device="cuda").manual_seed(3)
    q, k, v = (torch.randn(2, 77, 64, device="cuda", dtype=torch.bfloat16, generator=g, requires_grad=True)
               for _ in range(3))
    torch.library.opcheck(torch.ops.flashsim.attention_forward.default, (q, k, v, True),
                          test_utils=("test_schema", "test_faketensor", "test_autograd_registration"))


def test_torch_compile():
    fst = _need_gpu()
    g = torch.Generator(device="cuda").manual_seed(4)
    q, k, v = (torch.randn(1, 2, 256, 64, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    f = torch.compile(lambda a, b, c: fst.attention(a, b, c, causal=True) * 2, fullgraph=True)
    assert torch.equal(f(q, k, v), fst.attention(q, k, v, causal=True) * 2)


# --- the FP8 forward ---------------------------------------------------------------------------------

def test_fp8_near_float64_and_the_per_tensor_baseline():
    fst = _need_gpu()
    failures = []
    for dtype in (torch.bfloat16, torch.float16):
        for causal in (False, True):
            for b, h, n in ((1, 1, 1), (2, 3, 77), (1, 2, 1000), (1, 4, 8192)):
                g = torch.Generator(device="cuda").manual_seed(n)
                q, k, v = (torch.randn(b, h, n, 128, device="cuda", dtype=dtype, generator=g) for _ in range(3))
                with torch.no_grad():
                    o = fst.attention_fp8(q, k, v, causal=causal)
                    base = fst.attention_fp8(q, k, v, causal=causal, scaling="tensor", hadamard=False)
                ref, *_ = reference(q, k, v, causal, torch.zeros_like(q))
                e, e_base = rel(o, ref), rel(base, ref)
                # e4m3's 2^-4 relative step, averaged over a row (the GPU test's bound)
                if not (o.dtype == torch.bfloat16 and o.shape == q.shape and e < 0.1 and e_base < 0.1):
                    failures.append(f"{dtype} causal={causal} b,h,n={b},{h},{n}: {o.dtype} {tuple(o.shape)}, "
                                    f"rel err {e:.2e} (per tensor {e_base:.2e})")
    assert not failures, "\n".join(failures)


def test_fp8_refuses_what_it_cannot_do():
    fst = _need_gpu()
    x64 = torch.zeros(1, 2, 16, 64, device="cuda", dtype=torch.bfloat16)
    x = torch.zeros(1, 2, 16, 128, device="cuda", dtype=torch.bfloat16)
    for call, exc, words in [
        (lambda: fst.attention_fp8(x64, x64, x64), ValueError, "must be 128"),
        (lambda: fst.attention_fp8(x, x, x, scaling="row"), ValueError, "'block' or 'tensor'"),
        (lambda: fst.attention_fp8(x.float(), x.float(), x.float()), TypeError, "bfloat16"),
        (lambda: fst.attention_fp8(x.requires_grad_(), x, x), RuntimeError, "no FP8 backward"),
    ]:
        try:
            call()
        except exc as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError(f"no {exc.__name__} ({words})")
    with torch.no_grad():  # under no_grad the same inputs run
        assert fst.attention_fp8(x, x, x).shape == x.shape


def test_fp8_opcheck():
    _need_gpu()
    g = torch.Generator(device="cuda").manual_seed(5)
    q, k, v = (torch.randn(2, 77, 128, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
    torch.library.opcheck(torch.ops.flashsim.attention_forward_fp8.default, (q, k, v, True, False, True),
                          test_utils=("test_schema", "test_faketensor"))


if __name__ == "__main__":  # a runner for machines without pytest
    failed = 0
    for name, fn in sorted((n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)):
        try:
            fn()
            print(f"PASS {name}")
        except unittest.SkipTest as e:
            print(f"SKIP {name}: {e}")
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
    sys.exit(1 if failed else 0)
