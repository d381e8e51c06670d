# Session 6's third device call (bench/h200_job.sh bench/s6_call3_steps.sh): the matmul capture
# with counters after DECODE[32] / [64] switched (and M = 32, 64 added to the sweep); ncu's full
# set on the long-row softmax (shipped rowsplit against probe 6's tagged-words form).
source bench/softmax_ncu_step.sh
DEFAULT_STEPS="matmul softmax_ncu"
run_step() {
  case $1 in
    matmul) python3 -m profkit capture matmul --out $P ;;
    softmax_ncu) softmax_ncu_step ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
