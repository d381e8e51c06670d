# Session 6's sixth device call (bench/h200_job.sh bench/s6_call6_steps.sh): matmul probe 6's
# fourth round, the persistent kernel at 2 programs per SM (128x128 tiles) at 4096^3 and
# 4096x14336x4096 beside the shipped config and cuBLAS.
DEFAULT_STEPS="matmul6p"
run_step() {
  case $1 in
    matmul6p) python3 bench/probe_matmul6.py --out $J/matmul6p --budget 120 \
      --only p2_4096 --only p2_up ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
