#!/usr/bin/env bash
# one H200: the d = 128 forward and its load diagnostics on flat inputs (Q, K constant: no row maximum
# moves after the first tile, as in probe_consumer_loop) beside random inputs, same binary
set -u
B=.devcarry/bin
timeout 150 $B/bench_attention_forward_fast --variants 128 "sched 1 order kExpsFirst loads" > $OUT/fwd-random.txt 2>&1; echo "rc=$?" >> $OUT/fwd-random.txt
FLASHSIM_FWD_FLAT_INPUTS=1 timeout 150 $B/bench_attention_forward_fast --variants 128 "sched 1 order kExpsFirst loads" > $OUT/fwd-flat.txt 2>&1; echo "rc=$?" >> $OUT/fwd-flat.txt
for f in random flat; do echo "== $f"; grep -h "rc=\|ALL OK\|SOME" $OUT/fwd-$f.txt; grep -h -E "^bf16 d=128 N=(8192|16384) .* full" $OUT/fwd-$f.txt | sed -E 's/v6 ws 2c x128 st2 //; s/order kExpsFirst loads //; s/err O.*//'; done
