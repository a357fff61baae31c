#!/usr/bin/env bash
# one H200: the d = 128 forward's load and handshake diagnostics with the SMs' clock read after
# each timed run (cycles, not only ms), two runs
set -u
B=.devcarry/bin
for r in 1 2; do
  timeout 200 $B/bench_attention_forward_fast --variants 128 loads > $OUT/fwd-loads-clock-$r.txt 2>&1; echo "rc=$?" >> $OUT/fwd-loads-clock-$r.txt
done
grep -h "rc=\|ALL OK\|SOME" $OUT/fwd-loads-clock-*.txt
grep -h -E "^bf16 d=128 N=(8192|16384)" $OUT/fwd-loads-clock-*.txt | sed -E 's/v6 ws 2c x128 st2 //; s/order kExpsFirst loads //; s/err O.*//'
