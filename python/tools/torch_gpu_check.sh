#!/usr/bin/env bash
# flashsim.torch on a GPU machine: the torch tests, then python/tools/torch_gpu_check.py (accuracy
# against SDPA and float64, a small transformer's loss curve, speed beside cuDNN), logs in OUT_DIR.
#
#   python/tools/torch_gpu_check.sh BUILD_DIR|BIN_DIR OUT_DIR [torch_gpu_check.py options]
#
# BUILD_DIR is a CUDA build of this repository (e.g. build/default, or its bin/), copied or not: the
# package is BUILD_DIR/python/flashsim and the kernels BUILD_DIR/python/flashsim/
# libflashsim_attention_abi.so (FLASHSIM_ABI_LIB overrides). Python: $PYTHON, else python3 (the one
# that has PyTorch). Writes OUT_DIR/pytest.log, OUT_DIR/check.log and OUT_DIR/torch_gpu_check.json.
# Exit status: non-zero when the tests or the check failed.
set -uo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd) || exit 2
[ "$(basename "$build")" = bin ] && build=$(dirname "$build")
out=$2
shift 2
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}

if [ ! -f "$build/python/flashsim/__init__.py" ]; then
  echo "torch_gpu_check: $build/python/flashsim is not there: give a build folder of this repository" >&2
  exit 2
fi
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
if [ -z "${FLASHSIM_ABI_LIB:-}" ]; then
  export FLASHSIM_ABI_LIB="$build/python/flashsim/libflashsim_attention_abi.so"
fi
if [ ! -f "$FLASHSIM_ABI_LIB" ]; then
  echo "torch_gpu_check: $FLASHSIM_ABI_LIB is missing: build the target flashsim_attention_abi (CUDA on)" >&2
  exit 2
fi
export FLASHSIM_REQUIRE_ABI=1 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export FLASHSIM_COMMIT=${FLASHSIM_COMMIT:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)}

{
  echo "# $(date -u +%FT%TZ) $src (commit $FLASHSIM_COMMIT), build $build"
  echo "# kernels: $FLASHSIM_ABI_LIB"
  "$py" -c 'import torch; print("# torch", torch.__version__, "CUDA", torch.version.cuda, "device", torch.cuda.get_device_name() if torch.cuda.is_available() else None)'
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/# /'
} | tee "$out/env.log"

echo "== torch tests ==" | tee "$out/pytest.log"
if "$py" -c 'import pytest' 2>/dev/null; then
  "$py" -m pytest -q -rs -p no:cacheprovider "$src/python/tests/test_torch.py" 2>&1 | tee -a "$out/pytest.log"
  tests_rc=${PIPESTATUS[0]}
else
  "$py" "$src/python/tests/test_torch.py" 2>&1 | tee -a "$out/pytest.log"
  tests_rc=${PIPESTATUS[0]}
fi

echo "== torch_gpu_check.py ==" | tee "$out/check.log"
"$py" "$src/python/tools/torch_gpu_check.py" "$out/torch_gpu_check.json" "$@" 2>&1 | tee -a "$out/check.log"
check_rc=${PIPESTATUS[0]}

echo "torch tests exit $tests_rc, torch_gpu_check exit $check_rc; logs in $out"
[ "$tests_rc" -eq 0 ] && [ "$check_rc" -eq 0 ]
