#!/usr/bin/env bash
# Capture specs with counters, one `profkit capture` each, into $RUNS (jobs/zoo_holdout.toml):
#
#   RUNS=DIR LOGS=DIR BUDGET_S=200 bash holdout/capture.sh SPEC:FILE ...
#
# A capture that fails or hangs (150 s, its counter pass 100 s) is logged and the others go on;
# past BUDGET_S seconds no new capture starts and the ones left are named. Exits 1 if any failed.
set -uo pipefail
RUNS=${RUNS:?set RUNS to the runs folder}
LOGS=${LOGS:?set LOGS to a folder for the capture logs}
BUDGET=${BUDGET_S:-300}
mkdir -p "$RUNS" "$LOGS"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
unset TRITON_INTERPRET
t0=$(date +%s)
failed=() left=()
for item in "$@"; do
    spec=${item%%:*} file=${item#*:}
    if (( $(date +%s) - t0 > BUDGET )); then left+=("$spec"); continue; fi
    start=$(date +%s)
    timeout 150 python3 -m profkit capture "$spec" --from "$file" --out "$RUNS" \
        --ncu-timeout 100 > "$LOGS/capture-$spec.log" 2>&1
    rc=$?
    echo "capture $spec: exit $rc in $(( $(date +%s) - start )) s"
    if [ $rc -ne 0 ]; then failed+=("$spec"); tail -4 "$LOGS/capture-$spec.log" | sed 's/^/    /'; fi
done
echo "captures: $(( $(date +%s) - t0 )) s; failed: ${failed[*]:-none}; not started (budget): ${left[*]:-none}"
(( ${#failed[@]} == 0 ))
