#!/usr/bin/env bash
# Issue 10's kernel lab on the H200, as one background job that outlives a single device call:
# run this script again (within the machine's warm window) until it prints "lab finished".
#
#   bash bench/h200_lab.sh          # from the repository root on the GPU box; needs .whl/ (nvtx)
#
# Stages, in order (log per stage under $OUT):
#   1. smoke: each new kernel on one or two shapes, correctness + device time, no counters
#      (profkit capture --no-counters). A kernel with an incorrect or crashed case is reported
#      and left out of stage 3, so a broken kernel costs seconds, not a counter pass.
#   2. sum determinism: 20 repeats of each sum variant on one 2^28 fp32 input; distinct results
#      and their spread (atomics change the summation order between runs).
#   3. full captures with counters, default sweeps: vector_add 30 cases, sum 64, softmax 72,
#      matmul 42, rmsnorm 72 (variants triton, triton_v2, compile only).
#   4. optional (MATMUL_TUNE=1): bench/matmul_tune.py, alternative matmul configurations.
#   5. the table: bench/lab_table.py over every stored run (also $OUT/lab-table.txt).
# Expected (estimates, not measured): ~2 min smoke; captures ~2 min vector_add, ~3 sum,
# ~4.5 softmax, ~2.5 matmul, ~4 rmsnorm (ncu ~2 s a case; torch.compile ~3 s a shape, in the
# timing process and again under ncu): ~18-20 min in all, so two or three calls; each call waits
# up to ~9 min. KERNELS="sum matmul" bash bench/h200_lab.sh captures only those (smoke: all).
# Results in $OUT: RUN.tar.xz per capture (the run minus its raw report), RUN.ncu-rep.xz when
# under 15 MB, logs, the table.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
J=/tmp/lab
if [ ! -d $J ]; then
  mkdir -p $J
  cat > $J/job.sh <<'JOB'
set -u
J=/tmp/lab
SMOKE=/tmp/lab-smoke
PROFILES=/tmp/lab-profiles
smoke() {  # kernel, then capture options; prints "ok KERNEL ..." or "BROKEN KERNEL ..."
  local k=$1; shift
  python3 -m profkit capture "$k" --no-counters --out $SMOKE "$@" > $J/smoke-$k.log 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then echo "BROKEN $k (rc $rc): $(grep -m1 error $J/smoke-$k.log)"; return; fi
  # a wrong lab variant stops the kernel's full capture; a wrong baseline is only reported
  python3 - $SMOKE $k <<'PY'
import sys
from pathlib import Path

from profkit import store

cases = store.load(sorted(Path(sys.argv[1]).glob(f"{sys.argv[2]}-*"))[-1]).cases
bad = cases[~cases.correct.astype(bool)]
lab_bad = bad[~bad.baseline.astype(bool)]
notes = "; ".join(f"{r.variant} {r.dtype} {r.shape}: {r.error}" for r in bad.itertuples())
print(f"{'BROKEN' if len(lab_bad) else 'ok'} {sys.argv[2]}" + (f" (wrong: {notes})" if notes else ""))
PY
}
{
  smoke vector_add --dtype fp32 --dtype bf16 --shape 1048576 --shape 67108864
  smoke sum --shape 16777216 --shape 4096x4096
  smoke softmax --dtype fp16 --dtype fp32 --shape 4096x4096 --shape 1024x32768 --variant triton --variant torch
  smoke matmul --shape 4096x4096x4096 --shape 16x8192x8192
  smoke rmsnorm --dtype fp16 --dtype bf16 --shape 4096x8192 --variant triton --variant triton_v2 --variant native
} | tee $J/smoke.txt
python3 bench/lab_table.py $SMOKE/* > $J/smoke-table.txt 2>&1
python3 - > $J/sum-determinism.txt 2>&1 <<'PY'
import torch
from profkit.spec import find_spec
spec = find_spec("sum")
gen = torch.Generator(device="cuda").manual_seed(0)
inputs = spec.make_inputs((1 << 28,), "float32", "cuda", gen)
ref = float(spec.reference(inputs))
for name in ("triton_tree", "triton_atomic", "triton_onepass", "torch"):
    fn = spec.variant(name).fn
    vals = [float(fn(inputs)) for _ in range(20)]
    spread = (max(vals) - min(vals)) / abs(ref)
    err = max(abs(v - ref) for v in vals) / abs(ref)
    print(f"{name:<14} 20 runs: {len(set(vals))} distinct, spread {spread:.2e} rel, worst rel err {err:.2e}")
PY
echo done > $J/smoke.rc
for k in ${KERNELS:-vector_add sum softmax matmul rmsnorm}; do
  if ! grep -q "^ok $k\( \|$\)" $J/smoke.txt; then echo "skipped: smoke failed" > $J/capture-$k.log; continue; fi
  extra=""
  [ $k = rmsnorm ] && extra="--variant triton --variant triton_v2 --variant compile"
  python3 -m profkit capture $k --out $PROFILES $extra > $J/capture-$k.log 2>&1
  echo $? > $J/capture-$k.rc
done
[ "${MATMUL_TUNE:-0}" = 1 ] && python3 bench/matmul_tune.py $J/matmul-tune.csv > $J/matmul-tune.log 2>&1
python3 bench/lab_table.py $PROFILES/* > $J/lab-table.txt 2>&1
echo done > $J/all.rc
JOB
  KERNELS=${KERNELS:-} MATMUL_TUNE=${MATMUL_TUNE:-0} setsid nohup bash $J/job.sh > $J/job.log 2>&1 < /dev/null &
  echo "lab job started"
fi
for _ in $(seq 1 ${WAIT_STEPS:-105}); do [ -f $J/all.rc ] && break; sleep 5; done
# progress and whatever is finished so far
[ -f $J/smoke.txt ] && { echo "== smoke"; cat $J/smoke.txt; }
[ -f $J/smoke-table.txt ] && cat $J/smoke-table.txt
[ -f $J/sum-determinism.txt ] && { echo "== sum determinism (2^28 fp32)"; cat $J/sum-determinism.txt; }
for f in $J/capture-*.log; do [ -f "$f" ] && { echo "== $(basename $f)"; tail -n 3 "$f"; }; done
for run in /tmp/lab-profiles/*/; do
  [ -d "$run" ] || continue
  name=$(basename "$run")
  [ -f $J/sent-$name ] && continue  # $OUT is empty at every call: send each run once
  tar -C /tmp/lab-profiles --exclude='*.ncu-rep' -cJf $OUT/$name.tar.xz "$name"
  if [ -f "$run/counters.ncu-rep" ]; then
    xz -T0 -6 -c "$run/counters.ncu-rep" > /tmp/report.xz && [ $(stat -c %s /tmp/report.xz) -lt 15000000 ] && cp /tmp/report.xz $OUT/$name.ncu-rep.xz
  fi
  touch $J/sent-$name
done
cp $J/*.log $J/*.txt $J/*.csv $OUT/ 2>/dev/null
if [ -f $J/all.rc ]; then echo "== lab table"; cat $J/lab-table.txt; echo "lab finished"; else echo "lab still running"; fi
