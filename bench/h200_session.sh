#!/usr/bin/env bash
# This session's H200 work as one background job that outlives a single device call: call the
# script again (within the machine's warm window) until it prints "session finished". Each call
# waits up to ~9 min, then sends what finished since the last call as $OUT/batch.tar (split in
# 15 MB parts when larger): runs without their raw report, each report xz-compressed beside them.
#
#   STEPS="rms_a rms_b ..." bash bench/h200_session.sh     (default: every step below, in order)
#
# Steps, in priority order (a step's log is $J/<step>.log, its wall time in $J/<step>.time):
#   rms_a, rms_b  the RMSNorm sweep twice back to back (issue 7): A timing only, B with counters
#   old           the pre-schema-2 code (.oldcode, commit d5bcbf6) timing the same sweep (cost)
#   rms_v2        RMSNorm v3 (triton) against v2 and torch.compile, timing only (issue 10)
#   vector_add matmul softmax sum   the lab's captures with counters (issue 10)
#   sum_det       repeatability of each sum variant (atomics reorder the additions)
#   decode        the decode-step lab (issue 11)
#   suite         the explain hold-out suite (issue 9)
#   cost          counter-pass cost: profkit's default set against --set full, same cases (issue 9)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
J=/tmp/session
P=/tmp/session-runs   # every run lands here; each is sent once
if [ ! -d $J ]; then
  mkdir -p $J $P
  cat > $J/job.sh <<'JOB'
set -u
J=/tmp/session
P=/tmp/session-runs
RMS="--variant triton --variant eager --variant native --variant compile"
step() {  # name, then the command
  local name=$1; shift
  local t0=$(date +%s)
  "$@" > $J/$name.log 2>&1
  echo "rc $? wall $(( $(date +%s) - t0 )) s" > $J/$name.time
}
for s in ${STEPS:-rms_a rms_b old rms_v2 vector_add matmul softmax sum sum_det decode suite cost}; do
  case $s in
    rms_a) step $s python3 -m profkit capture rmsnorm $RMS --no-counters --out $P ;;
    rms_b) step $s python3 -m profkit capture rmsnorm $RMS --out $P ;;
    old) step $s bash -c "cd .oldcode && python3 -m profkit capture rmsnorm --no-counters --out /tmp/old-runs" ;;
    rms_v2) step $s python3 -m profkit capture rmsnorm --variant triton --variant triton_v2 --variant compile --no-counters --out /tmp/extra-runs ;;
    vector_add|matmul) step $s python3 -m profkit capture $s --out $P ;;
    softmax) step $s python3 -m profkit capture softmax --shape 4096x1024 --shape 4096x4096 --shape 4096x16384 --shape 16384x8192 --shape 1024x32768 --out $P ;;
    sum) step $s python3 -m profkit capture sum --shape 65536 --shape 1048576 --shape 16777216 --shape 1073741824 --shape 4096x4096 --shape 16384x8192 --out $P ;;
    sum_det) step $s python3 bench/sum_determinism.py ;;
    decode) step $s python3 bench/h200_decode.py --out /tmp/decode-runs --no-counters ;;
    suite) step $s python3 -m profkit capture explain_suite --from bench/explain_suite.py --out $P ;;
    cost) step $s python3 bench/ncu_cost.py /tmp/cost float16 1x4096 4096x4096 4096x8192 ;;
  esac
  echo $s >> $J/done.txt
done
echo done > $J/all.rc
JOB
  STEPS=${STEPS:-} setsid nohup bash $J/job.sh > $J/job.log 2>&1 < /dev/null &
  echo "session job started"
fi
for _ in $(seq 1 ${WAIT_STEPS:-110}); do [ -f $J/all.rc ] && break; sleep 5; done
echo "== done so far: $(tr '\n' ' ' < $J/done.txt 2>/dev/null)"
for f in $J/*.time; do [ -f "$f" ] && echo "$(basename $f .time): $(cat $f)"; done
# pack what finished since the last call
mkdir -p /tmp/pack && rm -rf /tmp/pack/*
for run in $P/*/ /tmp/old-runs/*/ /tmp/extra-runs/*/ /tmp/decode-runs/*/; do
  [ -d "$run" ] && [ -f "$run/manifest.json" ] || continue
  name=$(basename "$run")
  [ -f $J/sent-$name ] && continue
  mkdir -p /tmp/pack/runs && cp -r "$run" /tmp/pack/runs/
  rm -f /tmp/pack/runs/$name/*.ncu-rep
  [ -f "$run/counters.ncu-rep" ] && xz -T0 -6 -c "$run/counters.ncu-rep" > /tmp/pack/runs/$name/counters.ncu-rep.xz
  touch $J/sent-$name
done
cp $J/*.log $J/*.time $J/*.txt /tmp/pack/ 2>/dev/null
[ -d /tmp/cost ] && cp -r /tmp/cost /tmp/pack/ 2>/dev/null
tar -C /tmp/pack -cf /tmp/batch.tar .
if [ $(stat -c %s /tmp/batch.tar) -gt 15000000 ]; then split -b 15M -d /tmp/batch.tar $OUT/batch.tar.part; else cp /tmp/batch.tar $OUT/; fi
for f in $J/*.log; do echo "== $(basename $f)"; tail -n 4 "$f" | cut -c1-200; done
if [ -f $J/all.rc ]; then echo "session finished"; else echo "session still running"; fi
