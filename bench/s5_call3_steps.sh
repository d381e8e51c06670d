# Session 5's third device call (bench/h200_job.sh bench/s5_call3_steps.sh): the decode
# attention probe, the decode lab with the fused attention and dynamic_fused (issue 11), and the
# softmax long-row probe at 32 values per thread in 16-bit (issue 10)
DEFAULT_STEPS="attn5 decode softmax5"
run_step() {
  case $1 in
    attn5) python3 bench/probe_attn5.py --out $J/attn5 ;;
    decode) python3 bench/h200_decode.py --out $P --ncu-timeout 150 ;;
    softmax5) PROBE_ROWSPLIT=4096x4,8192x8,2048x4,8192x4 \
      python3 bench/probe_softmax4.py --out $J/softmax5 --budget 80 ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
