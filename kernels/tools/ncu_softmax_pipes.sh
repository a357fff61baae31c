#!/usr/bin/env bash
# Which pipe the softmax's instructions go to in the fast attention kernels, under ncu: per-opcode
# instruction counts (MUFU, F2FP, FFMA, FMNMX, ...), instructions per pipe (xu, fma, alu, ...), the
# pipes' and the issue slots' utilization. The question it answers (kernels/RESULTS.md, issue 32,
# "what was tried"): is the bf16 pack of P and dS (F2FP) executed by the XU pipe, beside MUFU.EX2,
# as the CUDA C++ Programming Guide's "all other type conversions: 16 per clock per SM" suggests?
# Compare smsp__inst_executed_pipe_xu.sum with the MUFU and F2FP counts of sass__inst_executed_per_opcode.
# Usage: kernels/tools/ncu_softmax_pipes.sh BIN_DIR OUT_DIR
#   BIN_DIR holds bench_attention_forward_fast and bench_attention_backward_fast. Needs ncu with
#   profiling rights (a Firecracker device machine; KINDS.md). Not run yet (2026-11-26).
set -u
bin=${1:?usage: ncu_softmax_pipes.sh BIN_DIR OUT_DIR}
out=${2:?usage: ncu_softmax_pipes.sh BIN_DIR OUT_DIR}
mkdir -p "$out"
command -v ncu > /dev/null || { echo "ncu_softmax_pipes.sh: ncu is not on the PATH" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
# metric names differ between ncu versions: take the ones this ncu has
ncu --query-metrics 2>/dev/null | awk '{print $1}' | grep -E "^(smsp__inst_executed_pipe_(xu|alu|fma|fmaheavy|fmalite|fp16|uniform)|smsp__issue_active|sm__pipe_(xu|tensor_op_gmma|tensor_op_hmma|alu|fma)[a-z_]*cycles_active|sass__inst_executed_per_opcode)$" \
  | sort -u > "$out/metric_names.txt"
counts=$(grep -E "inst_executed_pipe_" "$out/metric_names.txt" | sed 's/$/.sum/' | paste -sd, -)
util=$(grep -E "cycles_active$|issue_active$" "$out/metric_names.txt" | sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd, -)
opcodes=$(grep -q "^sass__inst_executed_per_opcode$" "$out/metric_names.txt" && echo ",sass__inst_executed_per_opcode")
metrics="launch__grid_size,launch__block_size,smsp__inst_executed.sum,$counts,$util$opcodes"
echo "metrics: $metrics"
# backward: --one runs it twice; the second call's main kernel is profiled
for d in 64 128; do
  ncu --clock-control none -k regex:attn_bwd_ws --launch-skip 1 --launch-count 1 --metrics "$metrics" \
    --print-metric-instances values --csv "$bin/bench_attention_backward_fast" --one "$d" 8192 0 bf16 \
    > "$out/bwd-d$d.csv" 2> "$out/bwd-d$d.err"
  echo "backward d = $d: exit $?"
done
# forward: the first warp-specialized launches of the default run (its small checks); the ratios of
# pipe to opcode counts do not depend on the shape
ncu --clock-control none -k regex:attn_fwd_ws --launch-count 6 --metrics "$metrics" --print-metric-instances values \
  --csv "$bin/bench_attention_forward_fast" > "$out/fwd-first.csv" 2> "$out/fwd-first.err"
echo "forward: exit $?"
# the conversion and special-function instructions in the forward's code, statically
cuobjdump --dump-sass "$bin/bench_attention_forward_fast" 2>/dev/null | grep -oE "(MUFU|F2FP|F2F|I2F|F2I)\.[A-Z0-9_.]+" \
  | sort | uniq -c | sort -rn | head -20 > "$out/sass-ops-forward.txt"
cat "$out/sass-ops-forward.txt"
