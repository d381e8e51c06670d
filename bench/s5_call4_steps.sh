# Session 5's fourth device call (bench/h200_job.sh bench/s5_call4_steps.sh): softmax with the
# long rows at 32 / 64 values per thread, and the decode lab with the attention split at 16 waves
DEFAULT_STEPS="softmax decode"
run_step() {
  case $1 in
    softmax) python3 -m profkit capture softmax --out $P ;;
    decode) python3 bench/h200_decode.py --out $P --ncu-timeout 150 ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
