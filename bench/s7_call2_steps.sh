# Session 7's second device call (bench/h200_job.sh bench/s7_call2_steps.sh): softmax probe 10 (the
# persistent split row fed through tensor descriptors, bench/probe_softmax10.py), then ncu's full
# set with source at fp16 1024x32768 for the shipped kernel and t8w8s3 (run again as call 3 after
# the spin's polls became relaxed loads with one fence after them).
DEFAULT_STEPS="softmax10 softmax_ncu"
run_step() {
  case $1 in
    softmax10) python3 bench/probe_softmax10.py --out $J/softmax10 --budget 110 ;;
    softmax_ncu)
      mkdir -p $J/softmax_ncu
      ncu --set full --import-source yes --clock-control none --nvtx \
        --nvtx-include "regex:sm6\..*/" -f -o $J/softmax_ncu/rep python3 bench/softmax_ncu6.py \
        't8w8s3=("rowsplit_tma",8192,4,8,3)' &&
        ncu -i $J/softmax_ncu/rep.ncu-rep --page raw --csv --print-units base \
          > $J/softmax_ncu/raw.csv &&
        ncu -i $J/softmax_ncu/rep.ncu-rep --page details > $J/softmax_ncu/details.txt &&
        (ncu -i $J/softmax_ncu/rep.ncu-rep --page source --csv --print-source sass \
          > $J/softmax_ncu/source.csv 2> $J/softmax_ncu/source.err || true) &&
        xz -T0 -6 $J/softmax_ncu/rep.ncu-rep ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
