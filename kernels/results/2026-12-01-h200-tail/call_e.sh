#!/usr/bin/env bash
# One H200, 2026-12-01, fifth call: the fast attention kernels' SM cycles at the clock ncu locks, as
# kernels/tools/ncu_cycles.sh runs them (attention only: the FP8 forward did not change; its two
# masks one after the other, each packed as soon as it is done), for cycles_vs_model.py on the
# launchers with O's rescale under the next S.
set -u
B=.devcarry/bin
W=/tmp/call_e; mkdir -p $W
export PATH=/usr/local/cuda/bin:$PATH
. kernels/tools/ncu_common.sh
ncu_setup call_e.sh $W
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
metrics=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
sizes=attn:16x16384x128,attn:32x16384x64,attn:32x8192x128,attn:64x8192x64,attn:64x4096x128,attn:128x4096x64,attn:20x5120x128,attn:14x9216x64
for mask in no yes; do
  timeout 260 ncu --metrics "$metrics" --csv -k "regex:attn_fwd_ws_kernel|attn_bwd_ws_kernel|attn_fwd_wgmma_kernel" \
    "$B/flashsim-gpu" compare --repeats 1 --no-profile --no-check --causal "$mask" --dtype bf16 \
    -s attn-fa2-mma,bwd-mma --sizes "$sizes" > "$W/attn-causal-$mask.csv" 2> "$W/attn-causal-$mask.err"
  echo "attention causal=$mask rc=$?" | tee -a $W/run.txt
  tar czf $OUT/all.tgz -C $W .
done
