#!/usr/bin/env bash
# one H200: the mask test only on the tiles that need it, in runs of tiles (MASK_SPLIT, second form), against the launchers
set -u
B=.devcarry/bin
for r in 1 2; do
  for d in 128 64; do
    timeout 140 $B/bench_attention_forward_fast --variants $d "mask split" > $OUT/fwd-mask2-d$d-$r.txt 2>&1; echo "rc=$?" >> $OUT/fwd-mask2-d$d-$r.txt
  done
done
grep -h "rc=\|ALL OK\|SOME" $OUT/fwd-mask2-*.txt | sort | uniq -c; grep -h "FAIL" $OUT/fwd-mask2-*.txt | head
grep -h -E "^bf16 d=(64 |128) N=(4096|8192|16384)" $OUT/fwd-mask2-*-1.txt | sed -E 's/err O.*//'
