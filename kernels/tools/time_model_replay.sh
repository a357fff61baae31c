#!/usr/bin/env bash
# The time model against a stored bench_kernels CSV, on the CPU: one line per row with the measured
# ms, `flashsim time`'s prediction and meas/pred (bf16 rows; attention rows from N = 1024).
#   kernels/tools/time_model_replay.sh BENCH_CSV h100|h200 [FLASHSIM]
set -euo pipefail
csv=${1:?usage: time_model_replay.sh BENCH_CSV h100|h200 [FLASHSIM]}
gpu=${2:?usage: time_model_replay.sh BENCH_CSV h100|h200 [FLASHSIM]}
B=${3:-build/default/bin/flashsim}
grep -E "^(attn|matmul|softmax)" "$csv" | while IFS=, read op shape dtype mask ms rest; do
  case $op in
    attn-fwd|attn-bwd) IFS=x read h n d <<< "$shape"; [ "$n" -lt 1024 ] && continue
      args="attention --n $n --d $d --heads $h"; [ $mask = causal ] && args="$args --causal"; [ $op = attn-bwd ] && args="$args --backward";;
    matmul) IFS=x read m n k <<< "$shape"; args="matmul --m $m --n $n --k $k";;
    softmax) IFS=x read r c <<< "$shape"; args="softmax --rows $r --cols $c";;
  esac
  [ "$dtype" = fp16 ] && continue
  p=$($B time $args --gpu "$gpu" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['predicted_ms'])")
  python3 -c "print(f'{\"$op\":9s} {\"$shape\":16s} {\"$mask\":6s} meas {float($ms):8.3f} pred {float($p):8.3f} meas/pred {float($ms)/float($p):5.2f}')"
done
