# Session 4's final captures (bench/h200_job.sh bench/s4_final_steps.sh); $P is the runs folder.
RMS="--variant triton --variant eager --variant native --variant compile"
DEFAULT_STEPS="rms_a rms_b"
run_step() {
  case $1 in
    rms_a) python3 -m profkit capture rmsnorm $RMS --variant triton_v3 --no-counters --out $P ;;
    rms_b) python3 -m profkit capture rmsnorm $RMS --out $P ;;
    decode) python3 bench/h200_decode.py --out $P --ncu-timeout 150 ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
