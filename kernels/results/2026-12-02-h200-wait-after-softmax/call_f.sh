#!/usr/bin/env bash
# One H200, 2026-12-02 (second session), sixth call: the binaries of call e again, the whole
# bench_kernels table a second time (SDPA in the same call): the second of the two calls.
set -u
B=.devcarry/bin
W=/tmp/call_f; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
timeout 150 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
grep -h "rc=" $W/bench/*.log
grep -h "attn-fwd.*16x16384x128\|time meas" $W/bench/bench_kernels.txt | cut -c1-150
