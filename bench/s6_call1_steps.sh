# Session 6's first device call (bench/h200_job.sh bench/s6_call1_steps.sh): issue 10's probes,
# each beside its baselines in one process: matmul decode split-K with in-kernel reduction and
# 4096^3 configs, softmax long-row candidates, vector_add candidates with ncu's DRAM %.
DEFAULT_STEPS="matmul6 softmax6 vadd6"
run_step() {
  case $1 in
    matmul6) python3 bench/probe_matmul6.py --out $J/matmul6 --budget 150 ;;
    softmax6) python3 bench/probe_softmax6.py --out $J/softmax6 --budget 120 ;;
    vadd6) python3 bench/probe_vadd6.py --out $J/vadd6 --budget 120 ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
