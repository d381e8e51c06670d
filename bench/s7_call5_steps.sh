# Session 7's fifth device call (bench/h200_job.sh bench/s7_call5_steps.sh): softmax probe 11 (the
# tagged-words split row with its wait in PTX, bench/probe_softmax11.py).
DEFAULT_STEPS="softmax11"
run_step() {
  case $1 in
    softmax11) python3 bench/probe_softmax11.py --out $J/softmax11 --budget 100 ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
