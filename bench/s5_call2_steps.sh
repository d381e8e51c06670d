# Session 5's second device call (bench/h200_job.sh bench/s5_call2_steps.sh): the RMSNorm sweep
# twice back to back with the final timing code (issue 7's reproducibility and agreement goals):
# A timing only (plus the older triton_v3), B with counters; $P is the runs folder.
RMS="--variant triton --variant eager --variant native --variant compile"
DEFAULT_STEPS="rms_a rms_b"
run_step() {
  case $1 in
    rms_a) python3 -m profkit capture rmsnorm $RMS --variant triton_v3 --no-counters --out $P ;;
    rms_b) python3 -m profkit capture rmsnorm $RMS --out $P ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
