#!/usr/bin/env bash
# The committed RMSNorm capture and the counter-pass cost benchmark, as one background job that
# outlives a single device call: call this script again (within the machine's warm window) until
# it prints "job finished". Results land in $OUT: run.tar.xz (the run minus its raw report),
# the report itself when it compresses under 15 MB, and the cost figures.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
J=/tmp/job
if [ ! -d $J ]; then
  mkdir -p $J
  setsid nohup bash -c "
    python3 -m profkit capture rmsnorm --out /tmp/profiles > $J/capture.log 2>&1; echo \$? > $J/capture.rc
    [ \"${COST:-1}\" = 1 ] && python3 bench/ncu_cost.py $J float16 1x4096 4096x4096 4096x8192 > $J/cost.out 2>&1; echo \$? > $J/cost.rc
  " > /dev/null 2>&1 < /dev/null &
  echo "job started"
fi
for _ in $(seq 1 ${WAIT_STEPS:-110}); do [ -f $J/cost.rc ] && break; sleep 5; done
tail -c 3000 $J/capture.log; cat $J/cost.out 2>/dev/null
if [ -f $J/capture.rc ] && [ ! -f $OUT/run.tar.xz ]; then
  run=$(ls -d /tmp/profiles/rmsnorm-* | head -1)
  ls -la "$run"
  tar -C /tmp/profiles --exclude='*.ncu-rep' -cJf $OUT/run.tar.xz "$(basename "$run")"
  xz -T0 -6 -c "$run/counters.ncu-rep" > /tmp/report.xz && [ $(stat -c %s /tmp/report.xz) -lt 15000000 ] && cp /tmp/report.xz $OUT/counters.ncu-rep.xz
fi
cp $J/*.log $J/*.out $J/*.json $OUT/ 2>/dev/null
[ -f $J/cost.rc ] && echo "job finished" || echo "job still running"
