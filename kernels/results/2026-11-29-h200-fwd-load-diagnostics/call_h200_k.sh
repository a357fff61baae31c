#!/usr/bin/env bash
# one H200: the consumer loop probe with K and V from two buffers in turn (the kernel's two-stage ring)
set -u
B=.devcarry/bin
for r in 1 2; do timeout 120 $B/probe_consumer_loop > $OUT/probe-consumer-loop-alt-$r.txt 2>&1; echo "rc=$?" >> $OUT/probe-consumer-loop-alt-$r.txt; done
grep -h "two consumers  \|384\|same\|rc=" $OUT/probe-consumer-loop-alt-*.txt
