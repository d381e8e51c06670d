# Session 7's second device call (bench/h200_job.sh bench/s7_call2_steps.sh): softmax probe 10 (the
# persistent split row fed through tensor descriptors, bench/probe_softmax10.py), then ncu's full
# set with source at fp16 1024x32768 for the shipped kernel and t8w8s3 (run again as call 3 after
# the spin's polls became relaxed loads with one fence after them).
source bench/softmax_ncu_step.sh
DEFAULT_STEPS="softmax10 softmax_ncu"
run_step() {
  case $1 in
    softmax10) python3 bench/probe_softmax10.py --out $J/softmax10 --budget 110 ;;
    softmax_ncu) softmax_ncu_step 't8w8s3=("rowsplit_tma",8192,4,8,3)' ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
