#!/usr/bin/env bash
# one H200: the ring backward's one-GPU paths with the output in the run's type, the GPU tests,
# and the d = 128 forward's load diagnostics
set -u
B=.devcarry/bin
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for d in "$(dirname "$(find /usr/local /opt /usr/lib -name 'libnccl.so.2' 2>/dev/null | head -1)")" \
         "$(dirname "$(find /usr/local /opt /usr/lib -name 'libcupti.so.13' 2>/dev/null | head -1)")"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/env.txt 2>&1
{
  $B/flashsim-gpu ring --gpus 1 --n 1000 --d 128 --dtype fp16 --repeats 1 --backward; echo "rc=$?"
  $B/flashsim-gpu ring --gpus 1 --n 16384 --d 64 --causal --split zigzag --repeats 1 --backward; echo "rc=$?"
  $B/flashsim-gpu ring --gpus 1 --n 16384 --d 128 --method allgather --repeats 1 --backward; echo "rc=$?"
  $B/flashsim-gpu ring --gpus 2 --n 16384 --d 128 --backward; echo "rc=$? (expected 2: one GPU)"
} > $OUT/ring-p1.txt 2>&1
timeout 300 $B/test_kernels_gpu > $OUT/test_kernels_gpu.txt 2>&1; echo "test_kernels_gpu rc=$?" >> $OUT/test_kernels_gpu.txt
timeout 200 $B/bench_attention_forward_fast --variants 128 loads > $OUT/fwd-loads.txt 2>&1; echo "rc=$?" >> $OUT/fwd-loads.txt
tail -3 $OUT/test_kernels_gpu.txt; grep -E "RESULT|rc=|validation|PASS|FAIL" $OUT/ring-p1.txt | head -20; grep -E "N=16384|N=8192|rc=" $OUT/fwd-loads.txt
