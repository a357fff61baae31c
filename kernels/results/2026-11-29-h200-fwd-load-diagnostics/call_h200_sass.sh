#!/usr/bin/env bash
# On the GPU machine (it has cuobjdump): the SASS of the probe and of the forward's launcher kernel,
# then the opcodes of each loop that holds the 16 products (sass-loop-counts.txt). BIN holds the
# stripped probe_consumer_loop and bench_attention_forward_fast.
set -eu
BIN=${1:?usage: call_h200_sass.sh BIN OUT}; OUT=${2:?usage: call_h200_sass.sh BIN OUT}
HERE=$(dirname "$0")
export PATH=/usr/local/cuda/bin:$PATH
cuobjdump -sass "$BIN/probe_consumer_loop" > "$OUT/probe.sass"
cuobjdump -sass "$BIN/bench_attention_forward_fast" > "$OUT/fwd-full.sass"
python3 "$HERE/sass_loop_counts.py" "$OUT/probe.sass:consumer_loop_kernelILi0ELb0ELb1E" \
  "$OUT/fwd-full.sass:attn_fwd_ws_kernelI13__nv_bfloat16Li128ELi128ELi2ELb0ELi1ELb0ELi2ELi1ELb0ELi0E"
