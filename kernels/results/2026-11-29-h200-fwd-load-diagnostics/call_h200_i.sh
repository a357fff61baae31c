#!/usr/bin/env bash
# one H200: the consumer loop probe with the mask test on run-time values (as the kernel compiles it)
set -u
B=.devcarry/bin
export PATH=/usr/local/cuda/bin:$PATH
for r in 1 2; do timeout 120 $B/probe_consumer_loop > $OUT/probe-consumer-loop-mask-$r.txt 2>&1; echo "rc=$?" >> $OUT/probe-consumer-loop-mask-$r.txt; done
cuobjdump -sass $B/probe_consumer_loop > $OUT/probe-mask.sass 2>&1
grep -h "two consumers\|384\|same\|rc=" $OUT/probe-consumer-loop-mask-*.txt
