# Session 6's third device call (bench/h200_job.sh bench/s6_call3_steps.sh): the matmul capture
# with counters after DECODE[32] / [64] switched (and M = 32, 64 added to the sweep); ncu's full
# set on the long-row softmax (shipped rowsplit against probe 6's tagged-words form).
DEFAULT_STEPS="matmul softmax_ncu"
run_step() {
  case $1 in
    matmul) python3 -m profkit capture matmul --out $P ;;
    softmax_ncu)
      mkdir -p $J/softmax_ncu
      ncu --set full --import-source yes --clock-control none --nvtx \
        --nvtx-include "regex:sm6\..*/" -f -o $J/softmax_ncu/rep python3 bench/softmax_ncu6.py &&
        ncu -i $J/softmax_ncu/rep.ncu-rep --page raw --csv --print-units base \
          > $J/softmax_ncu/raw.csv &&
        ncu -i $J/softmax_ncu/rep.ncu-rep --page details > $J/softmax_ncu/details.txt &&
        (ncu -i $J/softmax_ncu/rep.ncu-rep --page source --csv --print-source sass \
          > $J/softmax_ncu/source.csv 2> $J/softmax_ncu/source.err || true) &&
        xz -T0 -6 $J/softmax_ncu/rep.ncu-rep ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
