#!/usr/bin/env bash
# The L2 model's check on a GPU: flashsim-gpu compare at the default sizes plus sizes around the
# L2 capacity (0.5x-2x of 50-60 MB), every schedule, with the pred and meas/pred columns; then
# bwd-mma with the old head grouping (Q and dO only in the 20 MB budget) against the new one.
# Usage: kernels/tools/l2_validate.sh BIN_DIR OUT_DIR [TAG]
set -uo pipefail
if [ $# -lt 2 ]; then echo "usage: $0 BIN_DIR OUT_DIR [TAG]" >&2; exit 2; fi
bin=$1 out=$2 tag=${3:-gpu}
# Profiled measurements a run (the median is the row's figure): one range moves by up to 1 MiB.
meas=${MEASUREMENTS:-3}
mkdir -p "$out"
gpu="$bin/flashsim-gpu"
extra="matmul:2048x2048x2048,matmul:4096x4096x1024,matmul:8192x4096x512"
extra+=",softmax:96x131072,softmax:128x131072,softmax:256x65536"
extra+=",attn-fwd:16x4096x64,attn-fwd:64x2048x128,attn-fwd:16x8192x128"
extra+=",attn-bwd:64x2048x64,attn-bwd:32x4096x64,attn-bwd:16x4096x128"
rc=0
if [ "${SKIP_DEFAULT:-0}" != 1 ]; then
"$gpu" compare --sizes small,large --causal both --repeats 3 --measurements "$meas" ${DEFAULT_NO_CHECK:+--no-check} --seed 7 \
  --csv "$out/$tag-compare-default.csv" --json "$out/$tag-compare-default.json" 2>&1 | tee "$out/$tag-compare-default.txt" || rc=1
fi
# No CPU reference check here: the backward's float64 reference takes minutes at these sizes.
"$gpu" compare --sizes "$extra" --causal no --repeats 2 --measurements "$meas" --no-check --seed 8 \
  --csv "$out/$tag-compare-extra.csv" --json "$out/$tag-compare-extra.json" 2>&1 | tee "$out/$tag-compare-extra.txt" || rc=1
for group in 40 20; do
  echo "== bwd-mma, FLASHSIM_BWD_HEAD_GROUP=$group =="
  FLASHSIM_BWD_HEAD_GROUP=$group "$gpu" compare -s bwd-mma --sizes attn-bwd:128x2048x64 --causal both --repeats 5 --seed 9 || rc=1
done 2>&1 | tee "$out/$tag-bwd-mma-groups.txt"
exit $rc
