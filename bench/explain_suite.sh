#!/usr/bin/env bash
# Issue 9 on the H200, in one call (about 3-4 minutes; 5-6 with COST=1):
#   1. capture the explain hold-out suite (bench/explain_suite.py, four small KernelSpecs) into
#      $OUT/profiles: commit those runs under profiles/ and tests/test_explain_suite.py checks
#      explain's conclusions against the expectations written in the suite file;
#   2. list which of the curated metrics ncu printed n/a (the names marked verified=False in
#      profkit/metrics.py await this run);
#   3. with COST=1, time profkit's default counter pass against `ncu --set full` on a few RMSNorm
#      cases (issue 9's cost goal: the default pass at least 2x cheaper).
# Usage (from the repository root): OUT=/some/dir [COST=1] bash bench/explain_suite.sh
set -uo pipefail
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT/profiles"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}  # keep what the caller put there (wheels)
for k in suite_matmul suite_strided suite_bank suite_chain; do
    start=$(date +%s)
    python3 -m profkit capture "$k" --from bench/explain_suite.py --out "$OUT/profiles" \
        > "$OUT/capture-$k.log" 2>&1
    echo "capture $k: exit $? in $(( $(date +%s) - start )) s (log: capture-$k.log)"
done
if [ "${COST:-0}" = 1 ]; then
    python3 bench/ncu_cost.py "$OUT" float16 4096x8192 16x8192 > "$OUT/ncu-cost.log" 2>&1
    tail -1 "$OUT/ncu-cost.log"
fi
python3 - "$OUT/profiles" "$OUT" <<'PY'
import json, sys
from pathlib import Path
from profkit import store
from profkit.explain import Kind, explain_run

for path in store.list_runs(Path(sys.argv[1])):
    run = store.load(path)
    na = (run.manifest.get("counters") or {}).get("metrics_na", [])
    print(f"{run.run_id}: counters {run.manifest['counters'].get('status')}, n/a: {na or 'none'}")
    report = explain_run(run, [])
    (Path(sys.argv[2]) / f"{run.run_id}.explain.json").write_text(json.dumps(report.to_dict()))
    for f in report:
        if f.kind in (Kind.CASE, Kind.HOST):
            steps = ",".join(str(s.action) for s in f.next[:2])
            causes = ",".join(str(r.cause) for r in f.reasons[:3])
            print(f"  {f.variant:16} {f.dtype:9} {f.shape:15} {f.kind:5} {str(f.bottleneck):8} "
                  f"{str(f.unit):7} {causes:45} -> {steps}")
        elif f.kind == Kind.VERDICT:
            print(f"  {f.subject}: {f.verdict}")
PY
