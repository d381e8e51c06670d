#!/usr/bin/env bash
# Session 3, device call 1: probes that decide the lab's next kernel configurations and two timing
# questions of issue 7, as a background job (setsid) that outlives one call: call again within the
# machine's warm window until it prints "probes finished". Every step has its own time limit; each
# call sends all output so far as $OUT/probe.tar.gz and prints the finished steps' tables.
#
#   bash bench/h200_s3_probe.sh          (carry .whl)
#
# steps (wall budget):
#   rounds   bench/timing_rounds.py twice, two processes (per-graph medians: same/fresh/replay)   ~60 s
#   agree    bench/ncu_agreement_probe.py under ncu (cache control all, then none) and without   ~60 s
#   rms softmax memory matmul   bench/probe_<name>.py --out (the helpers' probes)             ~450 s
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
R=/tmp/probe
if [ ! -d $R ]; then
  mkdir -p $R
  cat > $R/job.sh <<'JOB'
set -u
R=/tmp/probe
step() {  # name, limit_s, then the command; log in $R/name.log, rc and wall time in $R/name.time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 $limit "$@" > $R/$name.log 2>&1
  echo "rc $? wall $(( $(date +%s) - t0 )) s" > $R/$name.time
  echo "== $name: $(cat $R/$name.time)"
}
NCU_AGREE="ncu --nvtx --nvtx-include regex:agree@.+/ --metrics gpu__time_duration.sum --csv --page raw --print-units base --clock-control none"
for s in ${STEPS:-rms softmax memory matmul rounds agree}; do
  case $s in
    rounds) step rounds_a 60 python3 bench/timing_rounds.py $R/rounds_a.csv 6
            step rounds_b 60 python3 bench/timing_rounds.py $R/rounds_b.csv 6 ;;
    agree) step agree_all 60 $NCU_AGREE --cache-control all -o $R/agree_all python3 bench/ncu_agreement_probe.py
           ncu --import $R/agree_all.ncu-rep --csv --page raw --print-units base --metrics gpu__time_duration.sum > $R/agree_all.csv 2>&1
           step agree_none 60 $NCU_AGREE --cache-control none -o $R/agree_none python3 bench/ncu_agreement_probe.py
           ncu --import $R/agree_none.ncu-rep --csv --page raw --print-units base --metrics gpu__time_duration.sum > $R/agree_none.csv 2>&1
           rm -f $R/*.ncu-rep
           step agree_device 60 python3 bench/ncu_agreement_probe.py --device
           cp $R/agree_device.log $R/agree_device.csv ;;
    rms) step rms 150 python3 bench/probe_rmsnorm.py --out $R/rms ;;
    softmax) step softmax 120 python3 bench/probe_softmax.py --out $R/softmax ;;
    memory) step memory 130 python3 bench/probe_memory.py --out $R/memory ;;
    matmul) step matmul 200 python3 bench/probe_matmul.py --out $R/matmul ;;
  esac
done
echo done > $R/all.rc
JOB
  STEPS=${STEPS:-} setsid nohup bash $R/job.sh > $R/job.log 2>&1 < /dev/null &
fi
for _ in $(seq 1 ${WAIT_STEPS:-110}); do [ -f $R/all.rc ] && break; sleep 5; done
tar -C /tmp -czf $OUT/probe.tar.gz probe
cat $R/job.log | tail -20
for f in $R/*.time; do echo "$(basename $f .time): $(cat $f)"; done
for name in rounds_a rounds_b agree_device rms softmax memory matmul; do
  [ -f $R/$name.log ] && { echo "---- $name"; tail -n 45 $R/$name.log | cut -c1-150; }
done
if [ -f $R/all.rc ]; then echo "probes finished"; else echo "probes still running"; fi
