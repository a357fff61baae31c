#!/usr/bin/env bash
# one H200: the d = 128 forward with its barriers tested early (kLoadsAllEarlyTest) against the
# launchers' kernels, three runs (checks first, then the timed shapes)
set -u
B=.devcarry/bin
for r in 1 2 3; do
  timeout 170 $B/bench_attention_forward_fast --variants 128 "loads kLoadsAll" > $OUT/fwd-early-$r.txt 2>&1; echo "rc=$?" >> $OUT/fwd-early-$r.txt
done
grep -h -c "FAIL" $OUT/fwd-early-*.txt; grep -h "rc=\|ALL OK\|SOME" $OUT/fwd-early-*.txt
grep -h -E "^bf16 d=128 N=(4096|8192|16384)" $OUT/fwd-early-*.txt | sed -E 's/v6 ws 2c x128 st2 //; s/order kExpsFirst loads //; s/err O.*//'
