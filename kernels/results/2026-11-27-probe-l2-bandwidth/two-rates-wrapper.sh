#!/usr/bin/env bash
# EXPERIMENT wrapper: shared arrays per kernel kind, distinct-line factor per GPU
args="$*"
case "$args" in
  *matmul*) export XP_SHARED="A,B" ;;
  *--backward*) export XP_SHARED="Q,dO,L,D" ;;
  *attention*) export XP_SHARED="K,V,KH" ;;
  *) export XP_SHARED="NONE" ;;
esac
case "$args" in
  *"--gpu h200"*) export XP_FACTOR=1.128 ;;
  *) export XP_FACTOR=1.365 ;;
esac
exec /work/main/build/default/bin/flashsim "$@"
