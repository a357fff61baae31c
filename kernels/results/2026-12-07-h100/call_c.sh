#!/usr/bin/env bash
# One H100, 2026-12-07, third call, the binaries of calls a and b: compute-sanitizer memcheck and
# racecheck over the bf16/fp16 forward driver's --sanitize checks, the two runs at once. Call b's
# sanitize_fast.sh --parallel cut them at its 200 s limit (sixteen runs at once); alone they need
# about 340 s.
set -u
W=/tmp/call_c; source kernels/tools/device_call_env.sh
for t in memcheck racecheck; do
  ( ex=; [ $t = racecheck ] && ex="--racecheck-report hazard"
    timeout 540 compute-sanitizer --tool $t $ex --error-exitcode 9 $B/bench_attention_forward_fast --sanitize > $W/attn-fwd-$t.txt 2>&1
    echo "attn-fwd $t rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/attn-fwd-$t.txt | tail -1)" >> $W/lines.txt ) &
done
wait; save; cat $W/lines.txt; cat $W/env.txt
