#!/usr/bin/env bash
# Session 4's probe call on the H200: one step per question, each under its own time limit, all
# results packed as $OUT/probe.tar.gz (logs, CSVs, the small check run without its raw report).
#   cupti       issue 7: kernel-timestamp spans vs event windows vs ncu (bench/cupti_probe.py)
#   rms_small   issue 7: a small RMSNorm capture with counters through the new device clock
#   softmax matmul decode sum   issue 10/11 probes (bench/probe_*4.py)
# STEPS="cupti rms_small" bash bench/h200_s4_probe.sh runs a subset.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
R=$OUT/r
mkdir -p $R /tmp/s4-probe-runs
step() {  # name, time limit (s), then the command
  local name=$1 lim=$2
  shift 2
  local t0=$(date +%s)
  timeout "$lim" "$@" > "$R/$name.log" 2>&1
  echo "$name rc $? wall $(( $(date +%s) - t0 )) s" | tee -a "$R/times.txt"
}
for s in ${STEPS:-cupti rms_small softmax matmul decode sum}; do
  case $s in
    cupti) step $s 170 python3 bench/cupti_probe.py --out $R/cupti ;;
    rms_small) step $s 90 python3 -m profkit capture rmsnorm --variant triton --variant native \
      --variant eager --shape 1x4096 --shape 16x8192 --shape 4096x8192 --out /tmp/s4-probe-runs ;;
    softmax) step $s 110 python3 bench/probe_softmax4.py --out $R/softmax ;;
    matmul) step $s 140 python3 bench/probe_matmul4.py --out $R/matmul ;;
    decode) step $s 80 python3 bench/probe_decode4.py --out $R/decode ;;
    sum) step $s 60 python3 bench/probe_sum4.py --out $R/sum ;;
  esac
done
for run in /tmp/s4-probe-runs/*/; do
  [ -f "$run/manifest.json" ] && mkdir -p $R/runs && cp -r "$run" $R/runs/ \
    && rm -f $R/runs/$(basename $run)/*.ncu-rep
done
tar -C $OUT -czf $OUT/probe.tar.gz r && rm -rf $R
echo "== tables"
tar -xzOf $OUT/probe.tar.gz r/times.txt
for s in cupti softmax matmul decode sum; do
  echo "== $s"; tar -xzOf $OUT/probe.tar.gz r/$s.log 2>/dev/null | tail -${TAIL:-25}
done
