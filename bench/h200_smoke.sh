#!/usr/bin/env bash
# First H200 call of the schema-2 timing: the timing smoke test, then a small capture with counters
# (device p50 against ncu's gpu__time_duration), then doctor. Results under $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
python3 -c "import pynvml, scipy; print('nvml', pynvml.__file__, 'scipy', scipy.__version__)"
python3 bench/h200_timing_smoke.py $OUT 2>&1 | tee $OUT/timing-smoke.txt
time python3 -m profkit capture rmsnorm --dtype fp16 --shape 1x4096 --shape 32x16384 --shape 4096x8192 --out /tmp/smoke > $OUT/capture.txt 2>&1
tail -30 $OUT/capture.txt
run=$(ls -d /tmp/smoke/rmsnorm-* | head -1)
cp $run/cases.csv $OUT/smoke-cases.csv; cp $run/manifest.json $OUT/smoke-manifest.json
python3 - "$run" <<'EOF'
import sys
from profkit import store
c = store.load(__import__("pathlib").Path(sys.argv[1])).cases
c["ncu_us"] = c.ncu_duration_ms * 1e3
c["dev_us"] = c.device_p50_ms * 1e3
print(c[["variant", "shape", "dev_us", "ncu_us", "kernel_count", "host_us", "loop_us", "device_method", "pct_copy_same_size"]].to_string())
EOF
