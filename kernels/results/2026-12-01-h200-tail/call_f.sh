#!/usr/bin/env bash
# One H200, 2026-12-01, sixth call: the d = 64 launchers' kernels with the softmax's exponentials
# first (as d = 128 runs them) on top of O's rescale under the next S, beside the launchers, twice.
set -u
B=.devcarry/bin
for r in 1 2; do
  timeout 120 $B/bench_attention_forward_fast --variants 64 "order kExpsFirst tail" > $OUT/fwd64-expsfirst-$r.txt 2>&1
  echo "rc=$?" >> $OUT/fwd64-expsfirst-$r.txt
done
grep -h "rc=\|ALL OK\|SOME" $OUT/*.txt | sort | uniq -c
grep -h -E "^bf16 d=64  N=(4096|8192|16384)" $OUT/fwd64-expsfirst-*.txt | sed -E 's/v6 ws 3c x128 //; s/err O.*//'
