#!/usr/bin/env bash
# One H200, 2026-12-01, fifth call, tree of the CPU test commit: the fast attention kernels' SM
# cycles at the clock ncu locks (kernels/tools/ncu_cycles.sh, attention only: the FP8 forward did
# not change), for cycles_vs_model.py on the launchers with O's rescale under the next S.
set -u
B=.devcarry/bin
W=/tmp/call_e; mkdir -p $W
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
bash kernels/tools/ncu_cycles.sh $B $W 2>&1 | tee $W/run.txt
tar czf $OUT/all.tgz -C $W .
