#!/usr/bin/env bash
# FA1's relative error against the float64 reference as N grows (bf16, d 64, causal and not):
# one flashsim-gpu compare per N, run side by side (the CPU reference dominates), one CSV each.
# Usage: kernels/tools/fa1_error_sweep.sh BIN_DIR OUT_DIR [BH] [N...]
#   defaults: BH 4, N = 1024 2048 4096 8192 12288 16384. Prints "N causal rel_err tolerance ok".
set -u
bin=${1:?usage: fa1_error_sweep.sh BIN_DIR OUT_DIR [BH] [N...]}
out=${2:?usage: fa1_error_sweep.sh BIN_DIR OUT_DIR [BH] [N...]}
bh=${3:-4}
shift $(( $# < 3 ? $# : 3 ))
ns=("$@")
[ ${#ns[@]} -gt 0 ] || ns=(1024 2048 4096 8192 12288 16384)
mkdir -p "$out"
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
pids=()
for n in "${ns[@]}"; do
  "$bin/flashsim-gpu" compare -s attn-fa1 --sizes "attn-fwd:${bh}x${n}x64" --causal both --dtype bf16 \
    --no-profile --repeats 1 --csv "$out/fa1-$n.csv" > "$out/fa1-$n.txt" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
echo "N causal rel_err tolerance ok"
for n in "${ns[@]}"; do
  # CSV columns by name: causal, rel_err, tolerance, ok
  awk -F, -v n="$n" 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    { print n, $col["causal"], $col["rel_err"], $col["tolerance"], $col["ok"] }' "$out/fa1-$n.csv"
done
exit $status
