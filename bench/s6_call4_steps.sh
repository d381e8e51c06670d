# Session 6's fourth device call (bench/h200_job.sh bench/s6_call4_steps.sh): matmul probe 6's
# third round (the K walk rotated per N tile, BK 32) and the softmax probe 7 (the row exchange
# overlapped with the next round's loads, bench/probe_softmax7.py).
DEFAULT_STEPS="matmul6r softmax7"
run_step() {
  case $1 in
    matmul6r) python3 bench/probe_matmul6.py --out $J/matmul6r --budget 90 \
      --only m128r --only m64r --only m16r ;;
    softmax7) python3 bench/probe_softmax7.py --out $J/softmax7 --budget 100 ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
