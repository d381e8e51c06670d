#!/usr/bin/env bash
# First H200 call: environment facts, the RMSNorm launch-config sweep, and small ncu reports
# for the test fixtures. Usage (device tool, carry .whl): bash bench/h200_probe.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
LOG=$OUT/log.txt
{
  echo "== env"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  ncu --version | tail -1; which ncu; readlink -f "$(which ncu)"
  ls -d /opt/nvidia/nsight-compute/*/extras/python 2>&1
  cat /proc/driver/nvidia/params 2>/dev/null | grep -i profil
  python3 -c "import torch, triton, pandas, click, rich, nvtx; print(torch.__version__, triton.__version__, pandas.__version__, click.__version__, rich.__file__)"
} > "$LOG" 2>&1
METRICS=$(python3 -c "from profkit.metrics import METRICS; print(','.join(m.ncu for m in METRICS))")
SECTIONS=(--section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis)
NCU=(ncu --nvtx --nvtx-include "regex:profkit@.+/" --replay-mode kernel --clock-control none --cache-control all)
cd /tmp
W=/tmp/fx; mkdir -p $W
P=(python3 "$OLDPWD/tests/fixtures/make_fixtures.py")
{
  echo "== fixtures"
  "${NCU[@]}" --metrics "$METRICS" "${SECTIONS[@]}" -f -o $W/fx_rmsnorm "${P[@]}" triton eager; echo "rc=$?"
  "${NCU[@]}" --metrics "$METRICS" "${SECTIONS[@]}" -f -o $W/fx_matmul "${P[@]}" matmul; echo "rc=$?"
  "${NCU[@]}" --metrics gpu__time_duration.sum,dram__bogus_not_a_metric.sum -f -o $W/fx_na "${P[@]}" triton; echo "rc=$?"
  ncu --nvtx --clock-control none -k regex:rmsnorm --metrics "$METRICS" -f -o $W/fx_plain "${P[@]}" plain; echo "rc=$?"
  echo "== no kernels"; ncu --nvtx --nvtx-include "regex:nomatch@.+/" --metrics gpu__time_duration.sum "${P[@]}" triton; echo "rc=$?"
  echo "== app error"; ncu --metrics gpu__time_duration.sum python3 -c "import sys; sys.exit(3)"; echo "rc=$?"
  echo "== n/a printed"; "${NCU[@]}" --metrics gpu__time_duration.sum,dram__bogus_not_a_metric.sum "${P[@]}" triton; echo "rc=$?"
  ls -la $W
} >> "$LOG" 2>&1
for f in $W/*.ncu-rep; do xz -9 -T4 -c "$f" > "$OUT/$(basename "$f").xz"; done
cd "$OLDPWD"
python3 bench/rmsnorm_tune.py "$OUT/tune.csv" 2>&1 | tee -a "$LOG" | tail -40
