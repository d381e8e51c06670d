#!/usr/bin/env bash
# Issue 20 part 4 on the H200: `profkit capture --source` on real kernels, in one call (a few
# minutes): the two probe specs of bench/source_probe.py (a spilling row kernel and contended
# atomics, each with a healthy twin) and RMSNorm at one shape (Triton, ATen's eager chain without
# line info, torch.compile's Inductor kernel). Prints each pass's wall time (the counter pass
# against the source pass) and what explain says; runs land in $OUT/profiles (reports xz'd).
# Usage (from the repository root): OUT=/some/dir bash bench/source_pass.sh
set -uo pipefail
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT/profiles"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}  # keep what the caller put there (wheels)
ncu --version | tail -1
cap() {
    local name=$1 start
    shift
    start=$(date +%s)
    python3 -m profkit capture "$@" --source --out "$OUT/profiles" > "$OUT/capture-$name.log" 2>&1
    echo "capture $name: exit $? in $(( $(date +%s) - start )) s (log: capture-$name.log)"
    grep -E "counter pass:|source pass" "$OUT/capture-$name.log"
}
cap spill src_spill --from bench/source_probe.py
cap hist src_hist --from bench/source_probe.py
cap rmsnorm rmsnorm --dtype float16 --shape 4096x8192
for run in "$OUT"/profiles/*/; do
    id=$(basename "$run")
    python3 - "$run" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "manifest.json"))
c, s = m["counters"], m.get("source_pass", {})
print(f"{m['run_id']}: counter pass {c.get('wall_s')} s; source pass {s.get('status')} "
      f"{s.get('wall_s')} s, {s.get('launches')} launches, {s.get('lines')} lines "
      f"{s.get('problem') or ''} {s.get('reason') or ''}")
PY
    COLUMNS=100 python3 -m profkit explain "$run" > "$OUT/explain-$id.txt" 2>&1
    grep -E "^  source" "$OUT/explain-$id.txt"
    for v in one_warp eight_warps torch bins4 bins1m triton eager compile; do
        COLUMNS=100 python3 -m profkit explain "$run" --case "$v" > "$OUT/explain-$id-$v.txt" 2>&1 \
            || rm -f "$OUT/explain-$id-$v.txt"
    done
done
for f in "$OUT"/profiles/*/*.ncu-rep; do xz -9 -T4 "$f"; done
ls -la "$OUT"/profiles/*/
