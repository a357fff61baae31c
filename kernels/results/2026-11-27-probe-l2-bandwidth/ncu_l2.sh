#!/usr/bin/env bash
# L2 -> SM bytes per SM cycle under ncu: the fast matmul at 8192^3 against the probe's copies (alone, shared lines, beside products)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
M=l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
mkdir -p $OUT
nvidia-smi -L > $OUT/ncu_l2.txt
P=.devcarry/bin/probe_l2_bandwidth
run() { echo "=== $*" >> $OUT/ncu_l2.txt; timeout 150 $NCU --metrics $M "$@" >> $OUT/ncu_l2.txt 2>&1; echo "rc=$?" >> $OUT/ncu_l2.txt; }
run -k regex:matmul_bf16_wgmma --launch-count 1 .devcarry/bin/bench_matmul_fast --time 8192 8192 8192
run -k regex:^stream_l2$ --launch-skip 61 --launch-count 1 $P
run -k regex:^stream_l2$ --launch-skip 109 --launch-count 1 $P
run -k regex:beside --launch-skip 1 --launch-count 11 $P
grep -E "^===|rc=|matmul_bf16|stream_l2|xbar2l1tex|srcunit_tex|cycles_elapsed|hmma|duration|ERROR|rror" $OUT/ncu_l2.txt | cut -c1-150 | head -120
