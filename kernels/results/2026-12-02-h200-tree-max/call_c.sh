#!/usr/bin/env bash
# One H200, 2026-12-02, third call: the d = 128 forward launchers with each row's maximum as a tree
# (tile::kExpsFirstTreeMax). The launcher beside its previous kernel (chain max) twice, the GPU tests,
# memcheck and racecheck over the forward driver's --sanitize run, then SDPA's rates and the whole
# bench_kernels table (kernels/tools/bench_kernels.sh) for the ">= 1.05x cuDNN" rows.
set -u
B=.devcarry/bin
W=/tmp/call_c; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
for r in 1 2; do
  timeout 80 $B/bench_attention_forward_fast --variants 128 "chain max" > $W/fwd128-chain-$r.txt 2>&1; echo "rc=$?" >> $W/fwd128-chain-$r.txt
done
save
( timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck.txt ) &
( timeout 200 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/racecheck.txt 2>&1; echo "racecheck rc=$?" >> $W/racecheck.txt ) &
wait
save
{ timeout 100 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
timeout 260 bash kernels/tools/bench_kernels.sh $B $W/bench; echo "bench_kernels.sh rc=$?" >> $W/bench/progress.log
save
grep -h "rc=\|ALL OK\|SOME\|ERROR SUMMARY\|RACECHECK SUMMARY\|test cases" $W/*.txt $W/*.err $W/bench/*.log 2>/dev/null | sort | uniq -c
grep -h "within 15\|SM clock" $W/bench/bench_kernels.txt
