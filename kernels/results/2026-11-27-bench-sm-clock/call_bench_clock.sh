#!/usr/bin/env bash
# bench_kernels with the SM clock after each timed run (--sm-clock 20, the default): every row's
# time error split into cycles and clock. No SDPA (the time model's rows only need ours).
set -u
D=$OUT/bench; mkdir -p $D
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=clocks.max.sm,power.limit --format=csv; } > $D/env.txt 2>&1
timeout 540 .devcarry/bb/bench_kernels --csv $D/bench_kernels.csv 2> $D/progress.log | tee $D/bench_kernels.txt | tail -8
cd $OUT && tar czf bench.tgz bench && rm -rf bench
