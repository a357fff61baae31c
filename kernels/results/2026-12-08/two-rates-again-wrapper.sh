#!/usr/bin/env bash
# EXPERIMENT wrapper (2026-12-08, not kept): `flashsim` built with two-rates-again-experiment.patch.
# Loads of the arrays a wave's blocks share at 53.9 B/clk (the memory unit's rate), every other
# copy slower by the published rate's ratio (42.3 B/clk on the H100, 42.8 on the H200).
#   FLASHSIM=PATCHED_BUILD/bin/flashsim kernels/tools/time_model_eval.py kernels/results/2026-12-08/two-rates-again-wrapper.sh
args="$*"
case "$args" in
  *matmul*) export XP_SHARED="A,B" ;;
  *--backward*) export XP_SHARED="Q,dO,L,D" ;;
  *attention*) export XP_SHARED="K,V,U" ;;
  *) export XP_SHARED="NONE" ;;
esac
case "$args" in
  *"--gpu h200"*) export XP_FACTOR=1.259 ;;
  *) export XP_FACTOR=1.274 ;;
esac
F=${FLASHSIM:-build/default/bin/flashsim}
if [ "$1" = time ]; then exec "$F" "$@" --unit memory:rate=53.9; fi
exec "$F" "$@"
