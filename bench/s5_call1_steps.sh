# Session 5's first device call (bench/h200_job.sh bench/s5_call1_steps.sh): the agreement probe
# with ncu run as profkit's capture runs it (--clock-control none), and the lab's captures with
# counters for the kernels changed in session 4 (sum, softmax's rowsplit, matmul's DECODE[128])
DEFAULT_STEPS="cupti sum softmax matmul"
run_step() {
  case $1 in
    cupti) python3 bench/cupti_probe.py --out $J/cupti ;;
    sum|softmax|matmul) python3 -m profkit capture $1 --out $P ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
