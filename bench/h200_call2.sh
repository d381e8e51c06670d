#!/usr/bin/env bash
# Second H200 call: persistent-kernel tuning at the prefill shapes, and a smoke test of the whole
# capture pipeline (timing + ncu counter pass + join) on two cases, plus `profkit doctor`.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m profkit doctor 2>&1 | tee $OUT/doctor.txt
python3 -m profkit capture rmsnorm --dtype fp16 --shape 4096x8192 --shape 16x8192 --out /tmp/smoke 2>&1 | tee $OUT/smoke.txt
run=$(ls -d /tmp/smoke/rmsnorm-* | head -1)
cp $run/cases.csv $OUT/smoke-cases.csv; cp $run/manifest.json $OUT/smoke-manifest.json; cp $run/ncu.log $OUT/smoke-ncu.log
python3 bench/rmsnorm_tune.py $OUT/tune-persistent.csv persistent 2>&1 | tail -20
