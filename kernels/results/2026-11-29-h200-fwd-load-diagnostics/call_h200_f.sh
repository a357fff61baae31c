#!/usr/bin/env bash
# one H200: the consumer loop probe with the kernel's block layout (384 threads, setmaxnreg 240) beside
# the two-warpgroup block
set -u
B=.devcarry/bin
for r in 1 2; do timeout 120 $B/probe_consumer_loop > $OUT/probe-consumer-loop-$r.txt 2>&1; echo "rc=$?" >> $OUT/probe-consumer-loop-$r.txt; done
cat $OUT/probe-consumer-loop-1.txt | head -16; grep -h "384\|same + timers\|two consumers  \|rc=" $OUT/probe-consumer-loop-2.txt
