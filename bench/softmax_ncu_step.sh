# The long-row softmax's ncu step, shared by the steps files that capture it: ncu's full set with
# source at fp16 1024x32768 for the shipped kernel and the NAME=CONFIG candidates given
# (bench/softmax_ncu6.py), then the raw, details and source pages, the report xz-compressed.
#   softmax_ncu_step [NAME=CONFIG ...]      (inside a job: $J is its folder)
softmax_ncu_step() {
  mkdir -p $J/softmax_ncu
  ncu --set full --import-source yes --clock-control none --nvtx \
    --nvtx-include "regex:sm6\..*/" -f -o $J/softmax_ncu/rep python3 bench/softmax_ncu6.py "$@" &&
    ncu -i $J/softmax_ncu/rep.ncu-rep --page raw --csv --print-units base \
      > $J/softmax_ncu/raw.csv &&
    ncu -i $J/softmax_ncu/rep.ncu-rep --page details > $J/softmax_ncu/details.txt &&
    (ncu -i $J/softmax_ncu/rep.ncu-rep --page source --csv --print-source sass \
      > $J/softmax_ncu/source.csv 2> $J/softmax_ncu/source.err || true) &&
    xz -T0 -6 $J/softmax_ncu/rep.ncu-rep
}
