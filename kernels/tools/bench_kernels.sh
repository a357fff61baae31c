#!/usr/bin/env bash
# The fast kernels' benchmark table: PyTorch SDPA's rates first (when python3 can import torch),
# then bench_kernels on the same GPU, which prints one table with ours, the references and the
# ratios. Without PyTorch the SDPA columns stay empty; cuBLAS and the device copy are always there.
# Every row also has the time model's `pred ms` and `meas/pred` (preset from the GPU's name; CSV
# columns pred_ms, time_meas_over_pred, pred_bound) and a line under the table counts the rows within
# 15 %. Extra arguments after --quick (e.g. --gpu-preset h100) go to bench_kernels.
#
#   kernels/tools/bench_kernels.sh BIN_DIR OUT_DIR [--quick]
#   e.g. kernels/tools/bench_kernels.sh build/default/bin /tmp/bench
set -euo pipefail
bin=${1:?usage: bench_kernels.sh BIN_DIR OUT_DIR [--quick]}
out=${2:?usage: bench_kernels.sh BIN_DIR OUT_DIR [--quick]}
quick=${3:-}
extra=("${@:4}")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ref_args=()
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  PYTHONUNBUFFERED=1 python3 "$here/sdpa_reference.py" $quick > "$out/sdpa.tsv" 2> "$out/sdpa.err"
  ref_args=(--ref "$out/sdpa.tsv")
else
  echo "bench_kernels.sh: no PyTorch with CUDA here: the SDPA columns stay empty" >&2
fi
"$bin/bench_kernels" "${ref_args[@]}" $quick "${extra[@]}" --csv "$out/bench_kernels.csv" 2> "$out/progress.log" | tee "$out/bench_kernels.txt"
