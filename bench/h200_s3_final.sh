#!/usr/bin/env bash
# Session 3's final captures as one background job that outlives a single device call: call the
# script again (within the machine's warm window) until it prints "session finished". Each call
# waits up to ~9 min, then sends what finished since the last call as $OUT/batch.tar (split in
# 15 MB parts when larger): runs without their raw report, each report xz-compressed beside them.
#
#   STEPS="rms_a rms_b ..." bash bench/h200_s3_final.sh     (default: every step below, in order)
#
# Steps (a step's log is $J/<step>.log, its wall time in $J/<step>.time):
#   rms_a, rms_b  the RMSNorm sweep twice back to back (issue 7): A timing only, B with counters
#   decode        the decode-step lab with its counter pass (issue 11)
#   softmax sum matmul matmul_fp8 vector_add   the lab's captures with counters (issue 10)
#   memprobe      bench/probe_memory.py again (its first run lost its table to a bug)
#   sum_det       repeatability of each sum variant (atomics reorder the additions)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
J=/tmp/s3
P=/tmp/s3-runs   # every run lands here; each is sent once
if [ ! -d $J ]; then
  mkdir -p $J $P
  cat > $J/job.sh <<'JOB'
set -u
J=/tmp/s3
P=/tmp/s3-runs
RMS="--variant triton --variant eager --variant native --variant compile"
step() {  # name, then the command
  local name=$1; shift
  local t0=$(date +%s)
  "$@" > $J/$name.log 2>&1
  echo "rc $? wall $(( $(date +%s) - t0 )) s" > $J/$name.time
}
for s in ${STEPS:-rms_a rms_b decode softmax sum matmul matmul_fp8 vector_add memprobe sum_det}; do
  case $s in
    rms_a) step $s python3 -m profkit capture rmsnorm $RMS --variant triton_v3 --no-counters --out $P ;;
    rms_b) step $s python3 -m profkit capture rmsnorm $RMS --out $P ;;
    decode) step $s python3 bench/h200_decode.py --out /tmp/decode-runs --ncu-timeout 150 ;;
    softmax|sum|vector_add|matmul|matmul_fp8) step $s python3 -m profkit capture $s --out $P ;;
    memprobe) step $s python3 bench/probe_memory.py --out $J/memprobe ;;
    sum_det) step $s python3 bench/sum_determinism.py ;;
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
for run in $P/*/ /tmp/decode-runs/*/; do
  [ -d "$run" ] && [ -f "$run/manifest.json" ] || continue
  name=$(basename "$run")
  [ -f $J/sent-$name ] && continue
  mkdir -p /tmp/pack/runs && cp -r "$run" /tmp/pack/runs/
  rm -f /tmp/pack/runs/$name/*.ncu-rep
  [ -f "$run/counters.ncu-rep" ] && xz -T0 -6 -c "$run/counters.ncu-rep" > /tmp/pack/runs/$name/counters.ncu-rep.xz
  touch $J/sent-$name
done
cp $J/*.log $J/*.time $J/*.txt /tmp/pack/ 2>/dev/null
[ -d $J/memprobe ] && cp -r $J/memprobe /tmp/pack/
tar -C /tmp/pack -cf /tmp/batch.tar .
if [ $(stat -c %s /tmp/batch.tar) -gt 15000000 ]; then split -b 15M -d /tmp/batch.tar $OUT/batch.tar.part; else cp /tmp/batch.tar $OUT/; fi
for f in $J/*.log; do echo "== $(basename $f)"; tail -n 4 "$f" | cut -c1-200; done
if [ -f $J/all.rc ]; then echo "session finished"; else echo "session still running"; fi
