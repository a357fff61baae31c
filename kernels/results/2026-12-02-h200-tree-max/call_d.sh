#!/usr/bin/env bash
# One H200, 2026-12-02, fourth call, the binaries of call c: racecheck over the forward driver's
# --sanitize run (it ran past call c's 200 s), then SDPA's rates and the whole bench_kernels table
# again (the second call for the ">= 1.05x cuDNN" rows).
set -u
B=.devcarry/bin
W=/tmp/call_d; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
timeout 200 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
timeout 340 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/racecheck.txt 2>&1; echo "racecheck rc=$?" >> $W/racecheck.txt
save
grep -h "rc=\|ALL OK\|SOME\|RACECHECK SUMMARY" $W/*.txt $W/bench/*.log 2>/dev/null | sort | uniq -c
grep -h "within 15\|SM clock" $W/bench/bench_kernels.txt
