#!/usr/bin/env bash
# ring_backward_gpu.sh CLOCKS=1 with a stand-in nvidia-smi and flashsim-gpu (no GPU needed): every
# run and every timed batch it reports (PHASE lines) gets a start and an end in phases.txt,
# clocks.txt a line per GPU and run and per GPU and batch, RING_ARGS reaches every run, and the
# sampler is stopped at the end.
set -u
script=${1:?usage: ring_clocks.sh PATH/TO/ring_backward_gpu.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/path" "$tmp/bin"
cat > "$tmp/path/nvidia-smi" <<'FAKE'
#!/usr/bin/env bash
# two GPUs at the power cap, one busier than the other
while true; do
  t=$(date -u +"%Y/%m/%d %H:%M:%S.%3N")
  echo "$t, 0, 1815 MHz, 673.00 W, 43, 0x0000000000000004"
  echo "$t, 1, 1950 MHz, 451.00 W, 46, 0x0000000000000004"
  sleep 0.02
done
FAKE
cat > "$tmp/bin/flashsim-gpu" <<'FAKE'
#!/usr/bin/env bash
s=$(date +%s.%N); sleep 0.2; e=$(date +%s.%N)
echo "PHASE ring-0 start $s"
echo "PHASE ring-0 end $e"
echo "RESULT method=ring args: $*"
FAKE
chmod +x "$tmp/path/nvidia-smi" "$tmp/bin/flashsim-gpu"
PATH="$tmp/path:$PATH" CLOCKS=1 RING_ARGS="--settle-ms 0" bash "$script" "$tmp/bin" "$tmp/out" bound > "$tmp/log" 2>&1
rc=$?
fail() { echo "$1"; cat "$tmp/log"; exit 1; }
[ $rc -eq 0 ] || fail "exit $rc, expected 0"
[ "$(grep -c ' start ' "$tmp/out/phases.txt")" -eq 8 ] && [ "$(grep -c ' end ' "$tmp/out/phases.txt")" -eq 8 ] ||
  fail "expected a start and an end for each of the 4 runs and their 4 batches"
[ "$(grep -c 'GPU 0 *1815 MHz at *673 W' "$tmp/out/clocks.txt")" -eq 8 ] &&
  [ "$(grep -c 'GPU 1 *1950 MHz at *451 W' "$tmp/out/clocks.txt")" -eq 8 ] &&
  [ "$(grep -c ':ring-0 GPU 1 ' "$tmp/out/clocks.txt")" -eq 4 ] || fail "clocks.txt: $(cat "$tmp/out/clocks.txt")"
[ "$(grep -c -- '--settle-ms 0' "$tmp/out/results.txt")" -eq 4 ] || fail "RING_ARGS did not reach every run"
sleep 0.1
pgrep -f "$tmp/path/nvidia-smi" > /dev/null && fail "the stand-in nvidia-smi still runs"
echo "ring_backward_gpu.sh CLOCKS=1: phases, clocks per GPU and RING_ARGS as expected"
