#!/usr/bin/env bash
# Second half of this session's H200 work, on the machine h200_session.sh left warm: let its job
# finish sum_det, stop it there (decode is left for a later session: the device time is short),
# then run the explain hold-out suite with the counter-pass cost (COST=1) as a background job.
# Call again until it prints "suite finished"; each call sends $OUT/batch2.tar.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
J=/tmp/session
if [ ! -f $J/suite.started ]; then
  for _ in $(seq 1 90); do grep -q sum_det $J/done.txt 2>/dev/null && break; sleep 5; done
  pkill -f "$J/job.sh"; pkill -f h200_decode.py; sleep 2
  touch $J/suite.started
  OUT=/tmp/suite-out COST=1 setsid nohup bash -c "bash bench/explain_suite.sh > $J/suite.log 2>&1; echo done > $J/suite.rc" > /dev/null 2>&1 < /dev/null &
fi
for _ in $(seq 1 ${WAIT_STEPS:-100}); do [ -f $J/suite.rc ] && break; sleep 5; done
mkdir -p /tmp/pack2 && rm -rf /tmp/pack2/*
for run in /tmp/session-runs/*/ /tmp/suite-out/profiles/*/; do
  [ -d "$run" ] && [ -f "$run/manifest.json" ] || continue
  name=$(basename "$run")
  [ -f $J/sent-$name ] && continue
  mkdir -p /tmp/pack2/runs && cp -r "$run" /tmp/pack2/runs/
  rm -f /tmp/pack2/runs/$name/*.ncu-rep
  [ -f "$run/counters.ncu-rep" ] && xz -T0 -6 -c "$run/counters.ncu-rep" > /tmp/pack2/runs/$name/counters.ncu-rep.xz
  touch $J/sent-$name
done
cp $J/*.log $J/*.time $J/*.txt /tmp/pack2/ 2>/dev/null
cp /tmp/suite-out/*.log /tmp/suite-out/*.json /tmp/pack2/ 2>/dev/null
tar -C /tmp/pack2 -cf /tmp/batch2.tar .
if [ $(stat -c %s /tmp/batch2.tar) -gt 15000000 ]; then split -b 15M -d /tmp/batch2.tar $OUT/batch2.tar.part; else cp /tmp/batch2.tar $OUT/; fi
cat $J/done.txt; for f in $J/*.time; do echo "$(basename $f .time): $(cat $f)"; done
tail -n 40 $J/suite.log 2>/dev/null | cut -c1-220
if [ -f $J/suite.rc ]; then echo "suite finished"; else echo "suite still running"; fi
