#!/usr/bin/env bash
# A device call's work as one background job that outlives the call: the first call starts it,
# each call waits up to WAIT_STEPS x 5 s, then sends what finished since the last call as
# $OUT/batch.tar (15 MB parts when larger): runs without their raw report, each report
# xz-compressed beside them, plus every step's log and wall time. Call again (within the machine's
# warm window) until it prints "job finished".
#
#   bash bench/h200_job.sh STEPS_FILE        STEPS="a b" to run a subset, in that order
#
# The tree is over the device tool's 64 MiB with the stored reports: `bash bench/lean_tree.sh
# strip` before the call, `restore` after.
# STEPS_FILE is sourced inside the job; it defines DEFAULT_STEPS and run_step NAME (the command of
# one step; its output goes to $J/NAME.log). Runs are expected under $P.
set -u
STEPS_FILE=$1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
J=/tmp/job-$(basename "$STEPS_FILE" .sh)
export J P=$J/runs
if [ ! -d $J ]; then
  mkdir -p $J $P
  cat > $J/job.sh <<JOB
set -u
source $STEPS_FILE
for s in \${STEPS:-\$DEFAULT_STEPS}; do
  t0=\$(date +%s)
  run_step \$s > $J/\$s.log 2>&1
  echo "rc \$? wall \$(( \$(date +%s) - t0 )) s" > $J/\$s.time
  echo \$s >> $J/done.txt
done
echo done > $J/all.rc
JOB
  STEPS=${STEPS:-} setsid nohup bash $J/job.sh > $J/job.log 2>&1 < /dev/null &
  echo "job started"
fi
for _ in $(seq 1 ${WAIT_STEPS:-110}); do [ -f $J/all.rc ] && break; sleep 5; done
echo "== done so far: $(tr '\n' ' ' < $J/done.txt 2>/dev/null)"
for f in $J/*.time; do [ -f "$f" ] && echo "$(basename $f .time): $(cat $f)"; done
rm -rf /tmp/pack && mkdir -p /tmp/pack
for run in $P/*/; do
  [ -f "$run/manifest.json" ] || continue
  name=$(basename "$run")
  [ -f $J/sent-$name ] && continue
  mkdir -p /tmp/pack/runs && cp -r "$run" /tmp/pack/runs/
  rm -f /tmp/pack/runs/$name/*.ncu-rep
  [ -f "$run/counters.ncu-rep" ] && xz -T0 -6 -c "$run/counters.ncu-rep" \
    > /tmp/pack/runs/$name/counters.ncu-rep.xz
  touch $J/sent-$name
done
cp $J/*.log $J/*.time /tmp/pack/ 2>/dev/null
for d in $J/*/; do [ "$(basename $d)" = runs ] || cp -r $d /tmp/pack/; done  # probes' folders
tar -C /tmp/pack -cf /tmp/batch.tar .
if [ $(stat -c %s /tmp/batch.tar) -gt 15000000 ]; then
  split -b 15M -d /tmp/batch.tar $OUT/batch.tar.part
else
  cp /tmp/batch.tar $OUT/
fi
for f in $J/*.log; do echo "== $(basename $f)"; tail -n ${TAIL:-4} "$f" | cut -c1-200; done
if [ -f $J/all.rc ]; then echo "job finished"; else echo "job still running"; fi
