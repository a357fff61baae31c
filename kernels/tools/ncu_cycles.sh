#!/usr/bin/env bash
# SM cycles of the fast kernels at the clock ncu locks (no power-cap clock in the picture): one
# profiled launch per kernel and shape, for the time model's cycles (kernels/tools/cycles_vs_model.py).
# Usage: kernels/tools/ncu_cycles.sh BIN_DIR OUT_DIR   (BIN_DIR holds flashsim-gpu and bench_attention_forward_fp8)
set -u
bin=${1:?usage: ncu_cycles.sh BIN_DIR OUT_DIR}
out=${2:?usage: ncu_cycles.sh BIN_DIR OUT_DIR}
. "$(dirname "$0")/ncu_common.sh"
ncu_setup ncu_cycles.sh "$out"
metrics=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
sizes=attn:16x16384x128,attn:32x16384x64,attn:32x8192x128,attn:64x8192x64,attn:64x4096x128,attn:128x4096x64,attn:20x5120x128,attn:14x9216x64
for mask in no yes; do
  timeout 280 ncu --metrics "$metrics" --csv -k "regex:attn_fwd_ws_kernel|attn_bwd_ws_kernel|attn_fwd_wgmma_kernel" \
    "$bin/flashsim-gpu" compare --repeats 1 --no-profile --no-check --causal "$mask" --dtype bf16 \
    -s attn-fa2-mma,bwd-mma --sizes "$sizes" > "$out/attn-causal-$mask.csv" 2> "$out/attn-causal-$mask.err"
  echo "attention causal=$mask rc=$?"
done
timeout 200 ncu --metrics "$metrics" --csv -k "regex:attn_fwd_fp8_kernel" --launch-skip 2 --launch-count 1 \
  "$bin/bench_attention_forward_fp8" --one 16384 0 0 > "$out/fp8.csv" 2> "$out/fp8.err"
echo "fp8 rc=$?"
