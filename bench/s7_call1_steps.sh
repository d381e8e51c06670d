# Session 7's first device call (bench/h200_job.sh bench/s7_call1_steps.sh): softmax probe 9 (each
# chunk normalized a round after its statistics, bench/probe_softmax9.py), then ncu's full set
# with source at fp16 1024x32768 for the shipped kernel and two deferred forms.
source bench/softmax_ncu_step.sh
DEFAULT_STEPS="softmax9 softmax_ncu"
run_step() {
  case $1 in
    softmax9) python3 bench/probe_softmax9.py --out $J/softmax9 --budget 110 ;;
    softmax_ncu) softmax_ncu_step '8kr=("rowsplit_defer",8192,4,8,False,False)' \
      '4kr=("rowsplit_defer",4096,8,4,False,False)' ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
