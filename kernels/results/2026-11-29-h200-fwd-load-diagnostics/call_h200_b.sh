#!/usr/bin/env bash
# one H200: the d = 128 forward's load and handshake diagnostics, three runs
set -u
B=.devcarry/bin
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/env.txt 2>&1
for r in 1 2 3; do
  timeout 150 $B/bench_attention_forward_fast --variants 128 loads > $OUT/fwd-loads-$r.txt 2>&1; echo "rc=$?" >> $OUT/fwd-loads-$r.txt
done
grep -h -E "N=(8192|16384)" $OUT/fwd-loads-*.txt | awk '{print $2,$3,$5,$NF=="checked"?"diag":"", $0}' | grep -oE "d=128 N=[0-9]+ +bh=[0-9]+ +[a-z]+ +.* ms +[0-9.]+ TFLOP/s" | sed -E 's/v6 ws 2c x128 st2 sched 1 order kExpsFirst loads //'
