#!/usr/bin/env bash
# one H200: K/V descriptors built once a ring buffer (kDescPerStage) against the launchers, d 128 and 64
set -u
B=.devcarry/bin
for r in 1 2; do
  for d in 128 64; do
    timeout 140 $B/bench_attention_forward_fast --variants $d "desc per stage" > $OUT/fwd-desc-d$d-$r.txt 2>&1; echo "rc=$?" >> $OUT/fwd-desc-d$d-$r.txt
  done
done
grep -h -c "FAIL" $OUT/fwd-desc-*.txt; grep -h "rc=\|ALL OK\|SOME" $OUT/fwd-desc-*.txt | sort | uniq -c
grep -h -E "^bf16 d=(64|128) N=(4096|8192|16384)" $OUT/fwd-desc-*.txt | sed -E 's/err O.*//'
