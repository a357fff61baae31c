#!/usr/bin/env bash
# One H200, 2026-12-02, first call: the full-mask forward with the last round split along the keys
# (tile::kSplitTail, sim/split_tail.h), bf16/fp16 and FP8. The launcher with the split and without it
# (FLASHSIM_FWD_SPLIT=0) beside the previous launcher kernel (kStatic) at d = 128 and 64, twice;
# the last round's staircase (--heads) both ways; the GPU tests; memcheck and racecheck over the
# forward driver's --sanitize run; flashsim-gpu compare (bytes and time) with the split and without.
set -u
B=.devcarry/bin
W=/tmp/call_a; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
for r in 1 2; do
  timeout 80 $B/bench_attention_forward_fast --variants 128 "sched 1 order kExpsFirstTreeMax" > $W/fwd128-split-$r.txt 2>&1; echo "rc=$?" >> $W/fwd128-split-$r.txt
  FLASHSIM_FWD_SPLIT=0 timeout 80 $B/bench_attention_forward_fast --variants 128 "sched 1 order kExpsFirstTreeMax" > $W/fwd128-nosplit-$r.txt 2>&1; echo "rc=$?" >> $W/fwd128-nosplit-$r.txt
  timeout 80 $B/bench_attention_forward_fast --variants 64 "st3 pp 1 sched 1 Q smem tail kRescaleUnderS" > $W/fwd64-split-$r.txt 2>&1; echo "rc=$?" >> $W/fwd64-split-$r.txt
done
save
for s in 1 0; do
  FLASHSIM_FWD_SPLIT=$s timeout 150 $B/bench_attention_forward_fp8 > $W/fp8-split$s.txt 2>&1; echo "rc=$?" >> $W/fp8-split$s.txt
done
save
for s in 1 0; do
  FLASHSIM_FWD_SPLIT=$s timeout 60 $B/bench_attention_forward_fast --heads 128 8192 32 33 34 > $W/heads-8192-split$s.txt 2>&1; echo "rc=$?" >> $W/heads-8192-split$s.txt
  FLASHSIM_FWD_SPLIT=$s timeout 60 $B/bench_attention_forward_fast --heads 128 16384 16 > $W/heads-16384-split$s.txt 2>&1; echo "rc=$?" >> $W/heads-16384-split$s.txt
done
save
( timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck.txt ) &
( timeout 250 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/racecheck.txt 2>&1; echo "racecheck rc=$?" >> $W/racecheck.txt ) &
( timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench_attention_forward_fp8 --sanitize > $W/memcheck-fp8.txt 2>&1; echo "memcheck rc=$?" >> $W/memcheck-fp8.txt ) &
( timeout 250 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 $B/bench_attention_forward_fp8 --sanitize > $W/racecheck-fp8.txt 2>&1; echo "racecheck rc=$?" >> $W/racecheck-fp8.txt ) &
{ timeout 120 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
for s in 1 0; do
  { FLASHSIM_FWD_SPLIT=$s timeout 80 $B/flashsim-gpu compare --no-check -s attn-fa2-mma --sizes attn:16x16384x128,attn:12x6144x128,attn:24x3072x64,attn:1x4096x128 --repeats 10 --csv $W/compare-split$s.csv; echo "compare rc=$?"; } > $W/compare-split$s.txt 2>&1
done
save
wait
save
grep -h "rc=\|ALL OK\|SOME\|ERROR SUMMARY\|RACECHECK SUMMARY\|test cases\|FAIL" $W/*.txt 2>/dev/null | sort | uniq -c
grep -h "16384.*full" $W/fwd128-*.txt $W/fp8-*.txt
