# Session 6's second device call (bench/h200_job.sh bench/s6_call2_steps.sh): the matmul probe's
# second round at M = 128 and M = 32 (row tiles of 64 / 16, 2 programs per SM, split-K 2 at BN 64)
DEFAULT_STEPS="matmul6b"
run_step() {
  case $1 in
    matmul6b) python3 bench/probe_matmul6.py --out $J/matmul6b --budget 100 --only m128b --only m32b ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
