"""flashsim's fast attention kernels as a PyTorch op with autograd.

``attention(q, k, v, causal=False)`` takes (batch, heads, N, d) tensors as
``torch.nn.functional.scaled_dot_product_attention`` does and computes the same thing with the
project's tensor-core FlashAttention-2 forward and backward (kernels/fast.h: Hopper wgmma + TMA,
warp-specialized). Drop it in where a model calls SDPA::

    import flashsim.torch as fst
    o = fst.attention(q, k, v, causal=True)   # instead of F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o.sum().backward()                        # dq, dk, dv from the fast backward

What it takes: CUDA tensors on an sm_90 GPU (H100 / H200), bf16 or fp16, all three of one dtype,
device and shape, head dimension 64 or 128, any N >= 0 (queries and keys of the same length), any
batch and heads; 3-D (batch*heads, N, d) works too. Non-contiguous inputs are copied to contiguous
ones first. The softmax scale is 1/sqrt(d) unless ``scale`` is given (then q is pre-scaled).
Anything else raises a TypeError / ValueError / RuntimeError that says what is wrong.

``attention_fp8(q, k, v, causal=False)`` is the FP8 (e4m3) forward (kernels/fp8.h): the same inputs
at d = 128, quantized on the GPU (one scale per block of rows and FlashAttention-3's random Hadamard
transform of Q and K, or ``scaling="tensor"`` and ``hadamard=False`` for the plain per-tensor
baseline), products on the FP8 tensor cores, O returned in bf16. Forward only: there is no FP8
backward, so inputs that require grad are refused (wrap the call in ``torch.no_grad()``).

The ops are registered with ``torch.library`` as ``flashsim::attention_forward`` (returns O and the
fp32 logsumexp per row), ``flashsim::attention_backward`` and ``flashsim::attention_forward_fp8``,
with fake (meta) implementations, so ``torch.compile`` traces through them. They run on the current
CUDA stream.

The kernels live in ``libflashsim_attention_abi.so``, which the CUDA build of this repository
produces (target ``flashsim_attention_abi``) into the package folder; it is loaded with ctypes on
first use. ``FLASHSIM_ABI_LIB`` (a file or a folder) overrides where it is looked for.
"""

import ctypes
import math
import os
import threading
from pathlib import Path
from typing import List, Optional, Tuple

import torch

__all__ = ["attention", "attention_fp8", "library_path", "is_available", "unavailable_reason"]

_LIB_NAME = "libflashsim_attention_abi.so"
_ABI_VERSION = 2
_MAX_BH = 65535  # the kernels put batch*heads on a grid dimension
_DTYPES = {torch.bfloat16: 0, torch.float16: 1}

_lib = None
_lib_lock = threading.Lock()


def _candidates() -> List[Path]:
    out: List[Path] = []
    env = os.environ.get("FLASHSIM_ABI_LIB")
    if env:
        p = Path(env)
        out.append(p / _LIB_NAME if p.is_dir() else p)
    here = Path(__file__).resolve().parent
    out.append(here / _LIB_NAME)  # build/<preset>/python/flashsim, or an installed package
    out.append(here.parent.parent / "kernels" / _LIB_NAME)  # build/<preset>/kernels
    out.append(here.parent.parent / "lib" / _LIB_NAME)
    return out


def library_path() -> Optional[Path]:
    """Where libflashsim_attention_abi.so would be loaded from, or None when none is found."""
    for p in _candidates():
        if p.is_file():
            return p
    return None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if path is None:
            tried = ", ".join(str(p) for p in _candidates())
            raise RuntimeError(
                f"flashsim.torch: {_LIB_NAME} not found (tried {tried}). Build the CUDA preset's target "
                "flashsim_attention_abi (cmake --build build/default --target flashsim_attention_abi) or set "
                "FLASHSIM_ABI_LIB to the library's path."
            )
        lib = ctypes.CDLL(str(path))
        lib.flashsim_abi_version.restype = ctypes.c_int
        version = lib.flashsim_abi_version()
        if version != _ABI_VERSION:
            raise RuntimeError(f"flashsim.torch: {path} has ABI version {version}, this module expects {_ABI_VERSION}")
        lib.flashsim_abi_last_error.restype = ctypes.c_char_p
        vp, ci = ctypes.c_void_p, ctypes.c_int
        lib.flashsim_attention_forward.restype = ci
        lib.flashsim_attention_forward.argtypes = [ci, vp, vp, vp, vp, vp, ci, ci, ci, ci, vp]
        lib.flashsim_attention_backward.restype = ci
        lib.flashsim_attention_backward.argtypes = [ci, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, ci, ci, ci, ci, vp]
        lib.flashsim_attention_backward_workspace_bytes.restype = ci
        lib.flashsim_attention_backward_workspace_bytes.argtypes = [ci, ci, ci, ctypes.POINTER(ctypes.c_size_t)]
        lib.flashsim_attention_fp8_workspace_bytes.restype = ci
        lib.flashsim_attention_fp8_workspace_bytes.argtypes = [ci, ci, ci, ctypes.POINTER(ctypes.c_size_t)]
        lib.flashsim_attention_forward_fp8.restype = ci
        lib.flashsim_attention_forward_fp8.argtypes = [ci, vp, vp, vp, vp, vp, vp, ci, ci, ci, ci, ci, ci, vp]
        _lib = lib
        return lib


_ready_devices = set()  # CUDA device indices attention() has been found able to run on


def unavailable_reason(device: Optional[torch.device] = None) -> Optional[str]:
    """Why attention() cannot run here (no CUDA, not an sm_90 GPU, no library), or None when it can."""
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    index = torch.cuda.current_device() if device is None or device.index is None else device.index
    if index in _ready_devices:  # checked once per device: attention() asks on every call
        return None
    cap = torch.cuda.get_device_capability(index)
    if cap != (9, 0):
        return (f"{torch.cuda.get_device_name(index)} is sm_{cap[0]}{cap[1]}; the kernels are built for sm_90a "
                "(H100 / H200)")
    if library_path() is None:
        return f"{_LIB_NAME} not found (set FLASHSIM_ABI_LIB or build the target flashsim_attention_abi)"
    _ready_devices.add(index)
    return None


def is_available() -> bool:
    """True when attention() can run on the current CUDA device."""
    return unavailable_reason() is None


def _check(lib, rc: int, what: str) -> None:
    if rc != 0:
        msg = lib.flashsim_abi_last_error().decode("utf-8", "replace")
        raise RuntimeError(f"flashsim.torch: {what} failed: {msg}")


def _aligned(t: torch.Tensor) -> torch.Tensor:
    # the kernels load with TMA / 16-byte vectors: contiguous and 16-byte aligned
    t = t.contiguous()
    return t if t.data_ptr() % 16 == 0 else t.clone()


def _stream(t: torch.Tensor) -> ctypes.c_void_p:
    return ctypes.c_void_p(torch.cuda.current_stream(t.device).cuda_stream)


# --- the ops --------------------------------------------------------------------------------


@torch.library.custom_op("flashsim::attention_forward", mutates_args=(), device_types="cuda")
def _forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """O = softmax(Q K^T / sqrt(d)) V and the fp32 logsumexp per row, for (batch*heads, N, d) tensors."""
    bh, n, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((bh, n), dtype=torch.float32, device=q.device)
    if bh == 0 or n == 0:
        return o, lse
    lib = _load()
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    dtype = _DTYPES[q.dtype]
    with torch.cuda.device(q.device):
        stream = _stream(q)
        for b0 in range(0, bh, _MAX_BH):
            b1 = min(bh, b0 + _MAX_BH)
            rc = lib.flashsim_attention_forward(dtype, q[b0].data_ptr(), k[b0].data_ptr(), v[b0].data_ptr(),
                                                o[b0].data_ptr(), lse[b0].data_ptr(), b1 - b0, n, d, int(causal),
                                                stream)
            _check(lib, rc, "attention forward")
    return o, lse


@_forward.register_fake
def _forward_fake(q, k, v, causal):
    return torch.empty_like(q), q.new_empty(q.shape[:-1], dtype=torch.float32)


@torch.library.custom_op("flashsim::attention_backward", mutates_args=(), device_types="cuda")
def _backward(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
              lse: torch.Tensor, causal: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV of attention for (batch*heads, N, d) tensors, from dO, O and the forward's logsumexp."""
    bh, n, d = q.shape
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if bh == 0 or n == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    lib = _load()
    dout, q, k, v, o = (_aligned(t) for t in (dout, q, k, v, o))
    lse = lse.contiguous()
    dtype = _DTYPES[q.dtype]
    with torch.cuda.device(q.device):
        stream = _stream(q)
        chunk = min(bh, _MAX_BH)
        size = ctypes.c_size_t()
        _check(lib, lib.flashsim_attention_backward_workspace_bytes(chunk, n, d, ctypes.byref(size)), "workspace size")
        workspace = torch.empty(size.value, dtype=torch.uint8, device=q.device)  # from PyTorch's caching allocator
        for b0 in range(0, bh, _MAX_BH):
            b1 = min(bh, b0 + _MAX_BH)
            rc = lib.flashsim_attention_backward(dtype, q[b0].data_ptr(), k[b0].data_ptr(), v[b0].data_ptr(),
                                                 o[b0].data_ptr(), dout[b0].data_ptr(), lse[b0].data_ptr(),
                                                 dq[b0].data_ptr(), dk[b0].data_ptr(), dv[b0].data_ptr(),
                                                 workspace.data_ptr(), b1 - b0, n, d, int(causal), stream)
            _check(lib, rc, "attention backward")
    return dq, dk, dv


@_backward.register_fake
def _backward_fake(dout, q, k, v, o, lse, causal):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup_context(ctx, inputs, output):
    q, k, v, causal = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal = causal
    ctx.mark_non_differentiable(lse)


def _autograd_backward(ctx, dout, _dlse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = _backward(dout.contiguous(), q, k, v, o, lse, ctx.causal)
    return dq, dk, dv, None


_forward.register_autograd(_autograd_backward, setup_context=_setup_context)


@torch.library.custom_op("flashsim::attention_forward_fp8", mutates_args=(), device_types="cuda")
def _forward_fp8(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, per_tensor: bool,
                 hadamard: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """The FP8 forward for (batch*heads, N, 128) bf16 / fp16 tensors: O in bf16 and the fp32 logsumexp."""
    bh, n, d = q.shape
    o = torch.empty((bh, n, d), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((bh, n), dtype=torch.float32, device=q.device)
    if bh == 0 or n == 0:
        return o, lse
    lib = _load()
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    dtype = _DTYPES[q.dtype]
    with torch.cuda.device(q.device):
        stream = _stream(q)
        chunk = min(bh, _MAX_BH)
        size = ctypes.c_size_t()
        _check(lib, lib.flashsim_attention_fp8_workspace_bytes(chunk, n, d, ctypes.byref(size)), "FP8 workspace size")
        # (the caching allocator's blocks are 512-byte aligned; the quantized operands need 256)
        workspace = torch.empty(size.value, dtype=torch.uint8, device=q.device)
        for b0 in range(0, bh, _MAX_BH):
            b1 = min(bh, b0 + _MAX_BH)
            rc = lib.flashsim_attention_forward_fp8(dtype, q[b0].data_ptr(), k[b0].data_ptr(), v[b0].data_ptr(),
                                                    o[b0].data_ptr(), lse[b0].data_ptr(), workspace.data_ptr(),
                                                    b1 - b0, n, d, int(causal), int(per_tensor), int(hadamard), stream)
            _check(lib, rc, "FP8 attention forward")
    return o, lse


@_forward_fp8.register_fake
def _forward_fp8_fake(q, k, v, causal, per_tensor, hadamard):
    return q.new_empty(q.shape, dtype=torch.bfloat16), q.new_empty(q.shape[:-1], dtype=torch.float32)


# --- the public function ----------------------------------------------------------------------


def _validate(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, who: str = "attention",
              head_dims: Tuple[int, ...] = (64, 128)) -> None:
    where = f"flashsim.torch.{who}"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{where}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dtype not in _DTYPES:
        raise TypeError(f"{where}: dtype must be torch.bfloat16 or torch.float16, got {q.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"{where}: q, k, v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.device.type != "cuda":
            raise ValueError(f"{where}: {name} is on {t.device}; the kernels need CUDA tensors")
    if k.device != q.device or v.device != q.device:
        raise ValueError(f"{where}: q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    if q.dim() not in (3, 4):
        raise ValueError(f"{where}: expected (batch, heads, N, d) or (batch*heads, N, d), got shape {tuple(q.shape)}")
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            f"{where}: q, k, v must have one shape (queries and keys of the same length, "
            f"no grouped heads), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    d = q.shape[-1]
    if d not in head_dims:
        raise ValueError(f"{where}: head dimension must be {' or '.join(map(str, head_dims))}, got {d}")
    # (not while torch.compile traces: file and device queries break the graph; the op itself still
    # raises at run time when the library or the GPU is missing)
    if not torch.compiler.is_compiling():
        reason = unavailable_reason(q.device)
        if reason is not None:
            raise RuntimeError(f"{where}: cannot run: {reason}")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              scale: Optional[float] = None) -> torch.Tensor:
    """Scaled dot-product attention on flashsim's fast kernels, differentiable in q, k and v.

    q, k, v: CUDA tensors of shape (batch, heads, N, d) as for
    ``torch.nn.functional.scaled_dot_product_attention`` (or (batch*heads, N, d)), bf16 or fp16,
    d = 64 or 128, any N. ``causal=True`` masks keys after the query (SDPA's ``is_causal=True``).
    ``scale`` defaults to 1/sqrt(d). Returns O with q's shape and dtype.
    """
    _validate(q, k, v)
    shape = q.shape
    d = shape[-1]
    if scale is not None and not math.isclose(scale, 1.0 / math.sqrt(d), rel_tol=1e-12):
        q = q * (scale * math.sqrt(d))
    bh = math.prod(shape[:-2])
    q3, k3, v3 = (t.reshape(bh, shape[-2], d) for t in (q, k, v))
    o, _ = _forward(q3.contiguous(), k3.contiguous(), v3.contiguous(), bool(causal))
    return o.reshape(shape)


def attention_fp8(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, *,
                  scaling: str = "block", hadamard: bool = True) -> torch.Tensor:
    """Scaled dot-product attention on the FP8 (e4m3) forward, d = 128, forward only.

    q, k, v as for ``attention`` (bf16 or fp16, (batch, heads, N, 128) or (batch*heads, N, 128)),
    quantized on the GPU each call: ``scaling="block"`` (one scale per 64 rows of Q and 32 of K, one
    per head of V) or ``"tensor"``, ``hadamard`` the random Hadamard transform of Q and K. Returns
    O in bf16 with q's shape. Its error on inputs with outliers is about half the per-tensor
    baseline's (kernels/RESULTS.md, "FP8, continued"). Inputs that require grad are refused.
    """
    _validate(q, k, v, "attention_fp8", (128,))
    if scaling not in ("block", "tensor"):
        raise ValueError(f"flashsim.torch.attention_fp8: scaling must be 'block' or 'tensor', got {scaling!r}")
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise RuntimeError("flashsim.torch.attention_fp8: there is no FP8 backward; call it under torch.no_grad() "
                           "or use flashsim.torch.attention for gradients")
    shape = q.shape
    bh = math.prod(shape[:-2])
    q3, k3, v3 = (t.reshape(bh, shape[-2], shape[-1]) for t in (q, k, v))
    o, _ = _forward_fp8(q3.contiguous(), k3.contiguous(), v3.contiguous(), bool(causal), scaling == "tensor",
                        bool(hadamard))
    return o.reshape(shape)
