#!/usr/bin/env bash
# The time model against the GPU (issue 32): bench_kernels' rows and compare's rows at sizes the
# model was not looked at on, each with pred ms and meas/pred; then the forward's ping-pong /
# overlap variants (the FlashAttention-3 ablation on the kernels). One call, logs under OUT.
#
#   kernels/tools/time_model_gpu.sh BIN_DIR OUT_DIR [COMPARE_SIZES]
set -uo pipefail
bin=${1:?usage: time_model_gpu.sh BIN_DIR OUT_DIR [COMPARE_SIZES]}
out=${2:?usage: time_model_gpu.sh BIN_DIR OUT_DIR [COMPARE_SIZES]}
sizes=${3:-attn:24x6144x128,attn:48x3072x64,attn:6x12288x128,attn:12x12288x64}
mkdir -p "$out"
for lib in libcupti.so.13 libnccl.so.2; do
  d=$(dirname "$(find / -name "$lib" -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null)
  [ -n "$d" ] && [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
echo "== bench_kernels (no SDPA columns) =="
timeout 300 "$bin/bench_kernels" --csv "$out/bench_kernels.csv" 2> "$out/bench_progress.log" | tee "$out/bench_kernels.txt"
echo "== compare at other sizes =="
timeout 200 "$bin/flashsim-gpu" compare -s attn-fa2-mma,bwd-mma --sizes "$sizes" --causal both --dtype bf16 \
  --csv "$out/compare.csv" 2> "$out/compare_progress.log" | tee "$out/compare.txt"
echo "== forward variants at d = 128 (ping-pong on/off) =="
timeout 120 "$bin/bench_attention_forward_fast" --variants 128 > "$out/fwd_variants.txt" 2>&1
tail -30 "$out/fwd_variants.txt"
