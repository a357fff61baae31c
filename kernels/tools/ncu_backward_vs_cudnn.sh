#!/usr/bin/env bash
# Our backward and SDPA's cuDNN backward on one shape under ncu, every kernel of one backward call
# each, at the clocks ncu locks (base): the time per kernel with the power cap out of the picture,
# instructions issued, tensor-pipe and DRAM figures. Used for kernels/RESULTS.md's d = 128 rows.
# Usage: kernels/tools/ncu_backward_vs_cudnn.sh BIN_DIR OUT_DIR [D N CAUSAL DTYPE]
#   (default 128 16384 0 bf16; 16 * 16384 / N heads of N tokens, as bench_kernels)
#   BIN_DIR holds bench_attention_backward_fast. Needs ncu, profiling rights and python3 with torch.
#   NCU_STALLS=1 in the environment adds the warp-state and scheduler sections.
set -eu
bin=${1:?usage: ncu_backward_vs_cudnn.sh BIN_DIR OUT_DIR [D N CAUSAL DTYPE]}
out=${2:?usage: ncu_backward_vs_cudnn.sh BIN_DIR OUT_DIR [D N CAUSAL DTYPE]}
d=${3:-128}
n=${4:-16384}
causal=${5:-0}
dtype=${6:-bf16}
here=$(cd "$(dirname "$0")" && pwd)
command -v ncu > /dev/null || { echo "ncu_backward_vs_cudnn.sh: ncu is not on the PATH" >&2; exit 2; }
mkdir -p "$out"
metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis)
# --stalls adds where the warps wait (WarpStateStats, SchedulerStats): the next question after the
# per-cycle gap of 2026-11-25 (more replay passes, so about twice the profiling time)
[ "${NCU_STALLS:-0}" = 1 ] && sections+=(--section WarpStateStats --section SchedulerStats)
# ours: --one runs the backward twice; the second call's kernels are the ones that count
ncu "${sections[@]}" --metrics "$metrics" --csv "$bin/bench_attention_backward_fast" --one "$d" "$n" "$causal" "$dtype" \
  > "$out/ncu-ours.csv" 2> "$out/ncu-ours.err"
# cuDNN: only the kernels between cudaProfilerStart and Stop (one backward after warm-ups)
ncu --profile-from-start off "${sections[@]}" --metrics "$metrics" --csv \
  python3 "$here/sdpa_backward_one.py" "$d" "$n" "$causal" "$dtype" > "$out/ncu-cudnn.csv" 2> "$out/ncu-cudnn.err"
echo "raw: $out/ncu-ours.csv (both backward calls), $out/ncu-cudnn.csv (one call)"
