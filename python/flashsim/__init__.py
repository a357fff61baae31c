"""flashsim from Python: the cycle-counting tile machine, its lessons and its traffic model.

The simulator is C++ (``flashsim._core``, bound with pybind11); this package re-exports it and
adds the helpers that reach the ``flashsim`` command line in-process, so their numbers are the
CLI's own::

    import flashsim
    prog = flashsim.assemble_file("lessons/01-dot-product/solution.fsa")
    m = flashsim.Machine(prog, symbolic=True)
    m.step(); m.step(); m.step()
    m.symbols            # ['a00', 'b00', 'a00*b00']
    m.step_back()
    m.run()
    m.counters["cycles"]  # 7

    flashsim.traffic("attention", schedule="fa2", n=4096, d=64, heads=8,
                     l2="50MiB", sms=132, blocks_per_sm=2)   # == `flashsim traffic ... --json`
    flashsim.gen("attention", schedule="fa2", n=256, d=64)  # trace text, as `flashsim gen`
    flashsim.lesson_check("02", "my.fsa").passed

Contents
--------
assemble, assemble_file      text -> Program (AssemblerError carries file, line, col)
Machine                      step, step_back, run, run_to_breakpoint, registers, counters, trace
run                          assemble a file, run it, return the Machine
traffic                      counted HBM bytes of a tile schedule (with the L2 model)
predict_time                 the time model's prediction for a fast kernel (units that overlap)
gen                          the trace generators
lesson_check, lessons        the curriculum's checker
cli                          any ``flashsim`` command, in-process: (exit_code, stdout, stderr)

``flashsim.torch`` (imported on its own: ``import flashsim.torch``) holds the fast attention
kernels as a PyTorch op; it needs PyTorch and the CUDA build's ABI library, not this module.
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, List, Mapping, Optional

try:
    from . import _core
except ImportError as _e:  # e.g. a Python other than the one the module was built for
    _core = None
    _core_error = _e
else:
    _core_error = None
    from ._core import (  # noqa: F401  (re-exported)
        AssemblerError,
        Machine,
        MachineFault,
        Program,
        Verdict,
        assemble,
        assemble_file,
        cli,
        lesson_check,
        lessons,
        lessons_root,
    )
    __version__ = _core.__version__

__all__ = [
    "AssemblerError", "MachineFault", "Program", "Machine", "Verdict", "assemble", "assemble_file", "run",
    "traffic", "predict_time", "gen", "lesson_check", "lessons", "lessons_root", "cli", "FlashsimCommandError",
]


def __getattr__(name: str) -> Any:
    # Only reached when the compiled module did not import: say why, instead of a bare AttributeError.
    if _core is None and name in __all__:
        raise ImportError(
            f"flashsim.{name} needs the compiled module flashsim._core, which did not import: {_core_error}. "
            "Build it with the default CMake preset and run the Python it was built for "
            "(flashsim.torch works without it)."
        )
    raise AttributeError(f"module 'flashsim' has no attribute {name!r}")


class FlashsimCommandError(ValueError):
    """A ``flashsim`` command that exited non-zero. Attributes: args_list, exit_code, stdout, stderr."""

    def __init__(self, args_list: List[str], exit_code: int, stdout: str, stderr: str):
        self.args_list, self.exit_code, self.stdout, self.stderr = args_list, exit_code, stdout, stderr
        detail = stderr.strip() or stdout.strip()
        super().__init__(f"flashsim {' '.join(args_list)} exited {exit_code}: {detail}")


# `flashsim time attention` options that take on or off: a bool is sent as that word (False was
# dropped unsaid, True sent a bare flag that took the next argument as its value)
_ON_OFF = frozenset({"pingpong", "overlap", "warp_specialized", "rescale_under_s", "softmax_under_pv", "split_tail"})


def _options(options: Mapping[str, Any], negations: Mapping[str, str] = {},
             on_off: frozenset = frozenset()) -> List[str]:
    """{'blocks_per_sm': 2, 'causal': True} -> ['--blocks-per-sm', '2', '--causal']."""
    out: List[str] = []
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool) and key in on_off:
            out += [flag, "on" if value else "off"]
            continue
        if isinstance(value, bool):
            if value:
                out.append(flag)
            elif key in negations:
                out.append(negations[key])
            continue
        if isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, str(v)]
            continue
        out += [flag, str(value)]
    return out


def _checked(args: List[str]) -> str:
    rc, out, err = _core.cli(args)
    if rc != 0:
        raise FlashsimCommandError(args, rc, out, err)
    return out


def traffic(kind: str = "attention", **options: Any) -> Dict[str, Any]:
    """Counted HBM traffic of a tile schedule, as ``flashsim traffic KIND ... --json`` prints it.

    ``kind`` is ``"attention"``, ``"matmul"`` or ``"softmax"``; keyword arguments are the command's
    options with ``_`` for ``-`` (``schedule="fa2", n=4096, d=64, heads=8, causal=True``, and for the
    GPU model ``l2="50MiB", sms=132, blocks_per_sm=2, l2_partitions=2, l2_ways=16`` ...;
    ``arrays=False`` is ``--no-arrays``). ``flashsim traffic attention --help`` lists them all.

    Returns the parsed JSON: ``{"gpu": {...} or None, "schedules": {name: {"arrays": {array:
    counts}, "total": counts, "instructions": n, "blocks": n}}}`` where counts are ``bytes_read,
    bytes_written, hbm_bytes_read, hbm_bytes_written, l2_hits, l2_misses``. The numbers come from the
    CLI's own code, run in this process, so they equal the executable's.
    Raises FlashsimCommandError for options the command rejects.
    """
    args = ["traffic", kind] + _options(options, {"arrays": "--no-arrays"}) + ["--json"]
    return _json.loads(_checked(args))


def predict_time(kind: str = "attention", **options: Any) -> Dict[str, Any]:
    """The time model's prediction for a fast kernel, as ``flashsim time KIND ... --json`` prints it.

    ``kind`` is ``"attention"``, ``"matmul"`` or ``"softmax"``; keyword arguments are the command's
    options with ``_`` for ``-``: ``n=16384, d=128, heads=16, causal=True, backward=True,
    version=6, gpu="h200", dtype="fp8", clock_mhz=1700, unit=["tensor:latency=384"]`` (a list gives
    the option once per item; the on/off options take bools: ``pingpong=False, overlap=True``) ...
    ``flashsim.cli(["time", KIND, "--help"])`` lists them all.

    Returns the parsed JSON: ``predicted_ms``, ``cycles``, ``bound``, ``clock_ghz``, ``units``
    ({name: {busy_cycles, busy_fraction}}), ``unit_figures`` ({name: {rate, latency}}), ``plan`` ...
    Raises FlashsimCommandError for options the command rejects.
    """
    return _json.loads(_checked(["time", kind] + _options(options, on_off=_ON_OFF) + ["--json"]))


def gen(kind: str, **options: Any) -> str:
    """A generated trace as text, as ``flashsim gen KIND ...`` prints it.

    Generators: ``matmul`` (scalar; ``n, regs, schedule``), ``softmax``, ``variance``,
    ``attention-scalar``, and on the tile machine ``attention`` (``schedule="fa2", n, d, br, bc,
    heads, causal``...), ``tiled-matmul``, ``tiled-softmax``. Keyword arguments are the command's
    options with ``_`` for ``-``; ``flashsim.cli(["gen", KIND, "--help"])`` lists them.
    Assemble the text with ``flashsim.assemble``.
    """
    return _checked(["gen", kind] + _options(options))


def run(path: str, params: Optional[Mapping[str, int]] = None, **machine_options: Any) -> "Machine":
    """Assemble the trace file at ``path``, run it to the end and return the Machine.

    ``params`` overrides ``.param`` defaults; ``machine_options`` go to ``Machine`` (``symbolic``,
    ``regs``, ``seed``, ``inputs``, ``costs``, ``l2``, ...). Raises AssemblerError or MachineFault.
    """
    m = Machine(assemble_file(path, dict(params) if params else None), **machine_options)
    m.run()
    return m
