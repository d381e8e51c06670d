# Session 6's fifth device call (bench/h200_job.sh bench/s6_call5_steps.sh): softmax probe 8,
# the descriptor-fed loop (looptma: chunks pipelined through shared memory, no exchange).
DEFAULT_STEPS="softmax8"
run_step() {
  case $1 in
    softmax8) python3 bench/probe_softmax8.py --out $J/softmax8 --budget 90 ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
