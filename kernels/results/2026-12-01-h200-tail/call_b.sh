#!/usr/bin/env bash
# One H200, 2026-12-01, second call: the d = 128 launchers now rescale O under S_j (kRescaleUnderS)
# against their previous kernels (tail kTailAfterPv), twice; the d = 64 launchers' kernels with the
# same change; the FP8 forward's (rescale-under-s, index 9) against its default at N = 8192 and
# 16384, twice; the FP8 variants' small checks; the GPU tests; compare at sizes outside the benchmark.
set -u
B=.devcarry/bin
W=/tmp/call_b; mkdir -p $W
save() { tar czf $OUT/all.tgz -C $W .; }
export PATH=/usr/local/cuda/bin:$PATH
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do [ -d $d ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } > $W/env.txt 2>&1
for r in 1 2; do
  timeout 100 $B/bench_attention_forward_fast --variants 128 "tail" > $W/fwd128-tail-$r.txt 2>&1; echo "rc=$?" >> $W/fwd128-tail-$r.txt
  save
  timeout 100 $B/bench_attention_forward_fast --variants 64 "tail" > $W/fwd64-tail-$r.txt 2>&1; echo "rc=$?" >> $W/fwd64-tail-$r.txt
  save
done
{ for r in 1 2; do for n in 16384 8192; do for c in 0 1; do for v in 0 9; do
  echo "== n=$n causal=$c variant=$v run=$r"; timeout 30 $B/bench_attention_forward_fp8 --one $n $c $v 2>&1 | grep -v '^device\|^seed'
done; done; done; done; } > $W/fp8-one.txt 2>&1
save
{ timeout 60 $B/bench_attention_forward_fp8 --sanitize; echo "rc=$?"; } > $W/fp8-checks.txt 2>&1
save
{ timeout 120 $B/test_kernels_gpu; echo "test_kernels_gpu rc=$?"; } > $W/tests.txt 2>&1
save
{ timeout 150 $B/flashsim-gpu compare -s attn-fa2-mma,bwd-mma --sizes attn:12x6144x128,attn:24x3072x64,attn:6x12288x128 --causal both --repeats 10 --csv $W/compare.csv; echo "compare rc=$?"; } > $W/compare.txt 2>&1
save
grep -h "rc=\|ALL OK\|SOME" $W/*.txt | sort | uniq -c
grep -h -E "^bf16 d=(64 |128) N=(8192|16384)" $W/fwd*-tail-1.txt | sed -E 's/v6 ws //; s/err O.*//'
grep -h "TFLOP" $W/fp8-one.txt | head -16
