#!/usr/bin/env bash
# The probe's four loops (and turns) on the time model with the products shared in part between
# streams (tensor-share-experiment.patch applied, FLASHSIM_TMIX=a): clocks a tile in the steady
# state, (cycles at N = 8192 - cycles at N = 4096) / 32, as kernels/results/2026-11-27-consumer-loop.
# usage: run.sh FLASHSIM   (from the repository root)
set -eu
F=${1:?usage: run.sh FLASHSIM}
D=kernels/results/2026-11-27-consumer-loop
for a in 0 0.25 0.5 0.75 0.9 0.99 0.999 1; do
  printf 'a = %-6s' "$a"
  for f in c1_kernel c2_kernel c2_turns c1_fa2 c2_fa2; do
    hi=$(FLASHSIM_TMIX=$a "$F" run $D/$f.fsa --no-table --param N=8192 | awk '/^predicted/{print $2}')
    lo=$(FLASHSIM_TMIX=$a "$F" run $D/$f.fsa --no-table --param N=4096 | awk '/^predicted/{print $2}')
    printf ' %s %5d' "$f" $(( (hi - lo) / 32 ))
  done
  echo
done
echo "measured (probe_consumer_loop, H100 2026-11-27): c1_kernel 1890 c2_kernel 2394 c2_turns 2432 c1_fa2 2011 c2_fa2 2938"
