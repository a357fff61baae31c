#!/usr/bin/env bash
# One H200, 2026-12-01, fourth call, the tree of call c: memcheck and racecheck over the forward
# driver's --sanitize run (every launcher and forward variant at n = 77 / 100, the new kernels
# among them), side by side; then SDPA's rates again and the whole bench_kernels table beside them
# (the second call for the ">= 1.05x cuDNN" rows; matmul and softmax rows for the time model).
set -u
B=.devcarry/bin
W=/tmp/call_d; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
( timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck.txt ) &
( timeout 300 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/racecheck.txt 2>&1; echo "racecheck rc=$?" >> $W/racecheck.txt ) &
wait
save
PYTHONUNBUFFERED=1 timeout 150 python3 kernels/tools/sdpa_reference.py > $W/sdpa.tsv 2> $W/sdpa.err; echo "sdpa rc=$?" >> $W/sdpa.err
save
timeout 330 $B/bench_kernels --ref $W/sdpa.tsv --csv $W/bench.csv > $W/bench.txt 2> $W/bench.err; echo "bench rc=$?" >> $W/bench.err
save
grep -h "rc=\|ALL OK\|SOME\|ERROR SUMMARY\|RACECHECK SUMMARY" $W/*.txt $W/*.err | sort | uniq -c
grep -h "within 15\|SM clock\|cycles meas" $W/bench.txt
