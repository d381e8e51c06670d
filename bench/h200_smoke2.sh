#!/usr/bin/env bash
# Second H200 call of the schema-2 timing: the refined smoke test (read flush, event-pair cost
# subtracted), then the cost baseline: the pre-schema-2 code (.oldcode, commit d5bcbf6) timing the
# whole 96-case RMSNorm sweep without counters, against the new code doing the same.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
export PYTHONPATH=/tmp/site:$PWD
python3 bench/h200_timing_smoke.py $OUT 2>&1 | tee $OUT/timing-smoke.txt
/usr/bin/time -f "old timing-only sweep wall %e s" env PYTHONPATH=/tmp/site:$PWD/.oldcode python3 -m profkit capture rmsnorm --no-counters --out /tmp/old > $OUT/old-sweep.txt 2>&1
tail -1 $OUT/old-sweep.txt
/usr/bin/time -f "new timing-only sweep wall %e s" python3 -m profkit capture rmsnorm --no-counters --out /tmp/new > $OUT/new-sweep.txt 2>&1
tail -1 $OUT/new-sweep.txt
cd /tmp && tar -cJf $OUT/sweeps.tar.xz old new
