#!/usr/bin/env bash
# Capture the pathology zoo (issue 20, part 5) on the H200 in one device call, then print what
# explain concludes on each case next to what zoo/EXPECTED says an expert concludes.
#
#   OUT=/some/dir bash zoo/capture.sh          # from the repository root; runs land in $OUT/profiles
#
# Then copy $OUT/profiles/* to tests/data/zoo/ and commit: tests/test_zoo.py checks explain against
# zoo/EXPECTED on them. One capture per spec (30, ~15-20 s each: about 8 minutes in all); a spec
# that fails or hangs (a per-spec timeout) is logged and the others go on. ZOO_ONLY="zoo_fma
# zoo_xu" captures only those; ZOO_BUDGET_S (default 380) stops starting new captures past that
# many seconds, naming the ones left, so the call returns with what it has.
set -uo pipefail
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT/profiles"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}  # keep what the caller put there (wheels)
unset TRITON_INTERPRET
BUDGET=${ZOO_BUDGET_S:-380}
# spec:module, the power-hungry GEMMs last (a hot GPU must not throttle the cases after them)
ALL="zoo_stream:memory zoo_l2_bound:memory zoo_l2_reuse:memory zoo_l1_bound:memory
zoo_latency:memory zoo_strided:memory zoo_gather:memory zoo_spills:memory zoo_atomics:atomics
zoo_fma:compute zoo_fp64:compute zoo_int_alu:compute zoo_xu:compute zoo_issue:compute
zoo_tail:shape zoo_small_grid:shape zoo_host:shape zoo_bank:cuda zoo_divergence:cuda
zoo_tiny_programs:launch zoo_scatter:launch zoo_atomic_order:atomics zoo_autocast:autocast
zoo_smem_occupancy:cuda zoo_barrier:cuda zoo_gemm_fp32:tensor zoo_gemm_spill:tensor
zoo_gemm_int8:tensor zoo_gemm_bf16:tensor zoo_gemm_power:tensor"
t0=$(date +%s)
left=()
for item in $ALL; do
    spec=${item%%:*} module=${item#*:}
    if [ -n "${ZOO_ONLY:-}" ] && [[ " $ZOO_ONLY " != *" $spec "* ]]; then continue; fi
    if (( $(date +%s) - t0 > BUDGET )); then left+=("$spec"); continue; fi
    start=$(date +%s)
    timeout 150 python3 -m profkit capture "$spec" --from "zoo/$module.py" \
        --out "$OUT/profiles" --ncu-timeout 110 > "$OUT/capture-$spec.log" 2>&1
    rc=$?
    echo "capture $spec: exit $rc in $(( $(date +%s) - start )) s (log: capture-$spec.log)"
    [ $rc -ne 0 ] && tail -3 "$OUT/capture-$spec.log" | sed 's/^/    /'
done
echo "captures: $(( $(date +%s) - t0 )) s in all"
if (( ${#left[@]} )); then
    echo "NOT captured (past ZOO_BUDGET_S=$BUDGET s): ZOO_ONLY=\"${left[*]}\" runs them"
fi
python3 zoo/summary.py "$OUT/profiles" "$OUT" 2>&1 | tee "$OUT/zoo-summary.txt"
