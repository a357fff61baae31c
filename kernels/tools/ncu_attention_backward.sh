#!/usr/bin/env bash
# The ncu profile behind kernels/RESULTS.md's backward figures (SM / L2 throughput, stalls per issued
# instruction): one launch of the wgmma backward kernel on a bf16 problem of bench_kernels' shape.
# Usage: kernels/tools/ncu_attention_backward.sh BIN_DIR [D N CAUSAL]   (default: 128 16384 0)
#   BIN_DIR holds bench_attention_backward_fast. Needs ncu (CUDA toolkit) and profiling rights (root).
set -eu
bin=${1:?usage: ncu_attention_backward.sh BIN_DIR [D N CAUSAL]}
d=${2:-128}
n=${3:-16384}
causal=${4:-0}
command -v ncu > /dev/null || { echo "ncu_attention_backward.sh: ncu is not on the PATH" >&2; exit 2; }
ncu --kernel-name regex:attn_bwd_wgmma --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum' \
  "$bin/bench_attention_backward_fast" --one "$d" "$n" "$causal"
