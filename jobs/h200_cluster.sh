#!/usr/bin/env bash
# Issue 23 on one H200: the same RMSNorm sweep (2 dtypes x 3 shapes, every variant, with counters)
# captured plainly, then through `--cluster local --workers 1`; jobs/cluster_agreement.py compares
# them case for case (5% or 0.5 us). A background job that outlives one device call: call this
# script again (within the warm window) until it prints "job finished". Results in $OUT: both runs
# (tar.xz, reports left out), cluster_agreement.{csv,json}, the logs and wall times.
# Needs Dask on the device (no network there): wheels in .whl/dask/, e.g. made here with
#   pip download "dask[distributed]" -d .whl/dask --only-binary=:all: \
#       --python-version 3.X --platform manylinux2014_x86_64   (the device's Python)
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -c "import distributed" 2>/dev/null ||
  python3 -m pip install -q --no-index --find-links .whl/dask --target /tmp/site "dask[distributed]" ||
  { echo "no dask on the device: see the header"; exit 1; }
J=/tmp/clusterjob
SWEEP="rmsnorm --dtype float16 --dtype bfloat16 --shape 1x4096 --shape 4096x4096 --shape 4096x8192"
if [ ! -d $J ]; then
  mkdir -p $J
  setsid nohup bash -c "
    s=\$(date +%s.%N); python3 -m profkit capture $SWEEP --out $J/plain > $J/plain.log 2>&1
    echo \$? > $J/plain.rc; echo \"\$s \$(date +%s.%N)\" > $J/plain.wall
    s=\$(date +%s.%N); python3 -m profkit capture $SWEEP --cluster local --workers 1 --out $J/cluster > $J/cluster.log 2>&1
    echo \$? > $J/cluster.rc; echo \"\$s \$(date +%s.%N)\" > $J/cluster.wall
    python3 jobs/cluster_agreement.py $J/plain/rmsnorm-* $J/cluster/rmsnorm-* $J > $J/agreement.out 2>&1
    echo \$? > $J/agreement.rc
  " > /dev/null 2>&1 < /dev/null &
  echo "job started"
fi
for _ in $(seq 1 ${WAIT_STEPS:-110}); do [ -f $J/agreement.rc ] && break; sleep 5; done
tail -c 1500 $J/plain.log 2>/dev/null; tail -c 2500 $J/cluster.log 2>/dev/null; cat $J/agreement.out 2>/dev/null
if [ -f $J/agreement.rc ]; then
  for side in plain cluster; do
    tar -C $J/$side --exclude='*.ncu-rep' -cJf $OUT/$side.tar.xz . 2>/dev/null
  done
  cp $J/*.log $J/*.rc $J/*.wall $J/*.out $J/cluster_agreement.* $OUT/ 2>/dev/null
  echo "job finished"
else
  echo "job still running"
fi
