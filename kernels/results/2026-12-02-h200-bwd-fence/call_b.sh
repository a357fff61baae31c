#!/usr/bin/env bash
# One H200, 2026-12-02 (third session), second call: the landed kernels (tree 236a7ff, the kernels
# of e35abe2) once more: the whole bench_kernels table with SDPA in the same call, then compare at
# sizes no earlier call ran (time and HBM bytes against the models).
set -u
B=.devcarry/bin
W=/tmp/call_b; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
timeout 200 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
timeout 150 $B/flashsim-gpu compare -s attn-fa2-mma,bwd-mma --sizes attn:24x6144x128,attn:12x12288x64,attn:40x3072x128 \
  --causal both --dtype bf16 --csv $W/compare.csv > $W/compare.txt 2>&1; echo "compare rc=$?" >> $W/compare.txt
save
tail -3 $W/bench/progress.log; grep -c "" $W/bench/bench_kernels.csv
cut -c1-220 $W/compare.txt | tail -30
