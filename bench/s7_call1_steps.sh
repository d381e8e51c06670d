# Session 7's first device call (bench/h200_job.sh bench/s7_call1_steps.sh): softmax probe 9 (each
# chunk normalized a round after its statistics, bench/probe_softmax9.py), then ncu's full set
# with source at fp16 1024x32768 for the shipped kernel and two deferred forms.
DEFAULT_STEPS="softmax9 softmax_ncu"
run_step() {
  case $1 in
    softmax9) python3 bench/probe_softmax9.py --out $J/softmax9 --budget 110 ;;
    softmax_ncu)
      mkdir -p $J/softmax_ncu
      ncu --set full --import-source yes --clock-control none --nvtx \
        --nvtx-include "regex:sm6\..*/" -f -o $J/softmax_ncu/rep python3 bench/softmax_ncu6.py \
        '8kr=("rowsplit_defer",8192,4,8,False,False)' '4kr=("rowsplit_defer",4096,8,4,False,False)' &&
        ncu -i $J/softmax_ncu/rep.ncu-rep --page raw --csv --print-units base \
          > $J/softmax_ncu/raw.csv &&
        ncu -i $J/softmax_ncu/rep.ncu-rep --page details > $J/softmax_ncu/details.txt &&
        (ncu -i $J/softmax_ncu/rep.ncu-rep --page source --csv --print-source sass \
          > $J/softmax_ncu/source.csv 2> $J/softmax_ncu/source.err || true) &&
        xz -T0 -6 $J/softmax_ncu/rep.ncu-rep ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
