# Session 4's second device call (bench/h200_job.sh bench/s4_call2_steps.sh): the CUPTI probe with
# the torch-2.11 reader, a small RMSNorm capture through it, the switched softmax long-row classes
DEFAULT_STEPS="cupti rms_small softmax"
run_step() {
  case $1 in
    cupti) python3 bench/cupti_probe.py --out $J/cupti ;;
    rms_small) python3 -m profkit capture rmsnorm --variant triton --variant native \
      --variant eager --shape 1x4096 --shape 16x8192 --shape 4096x8192 --out $P ;;
    softmax) python3 -m profkit capture softmax --shape 1024x32768 --shape 256x65536 \
      --variant triton --variant torch --variant eager --out $P ;;
    *) echo "unknown step $1"; return 2 ;;
  esac
}
