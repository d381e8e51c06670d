"""jobs/decode_capture.py end to end on its CPU path (tiny layer, graph variants run eagerly,
host clock): every variant checked, timed, probed and stored as a profkit run, schema-2 columns.

One bench run (each costs seconds of CPU) checks the counter pass's failure path too: a fake ncu on
PATH prints NVIDIA's permission text, and the run is stored as timing only, with the reason and the
fix (the other ways ncu fails take the same path: tests/test_capture_counters.py classifies them).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from profkit import store

ROOT = Path(__file__).resolve().parent.parent


def test_bench_stores_a_decode_run(tmp_path, fake_ncu_on_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    argv_file = tmp_path.parent / "ncu-argv.json"
    monkeypatch.setenv("FAKE_NCU_ARGV", str(argv_file))
    argv = [sys.executable, str(ROOT / "jobs" / "decode_capture.py"), "--device", "cpu"]
    argv += ["--out", str(tmp_path), "--steps", "6", "--warmup", "2", "--batches", "1"]
    argv += ["--caches", "8", "--probe-caches", "8", "--dynamic-cache", "12", "--walk", "2,4"]
    argv += ["--cpu-counters", "--counter-shape", "1,8"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run = store.load(store.resolve(None, tmp_path))
    assert run.manifest["kernel"] == "decode"
    assert "not an end-to-end serving claim" in run.manifest["note"]
    cases = run.cases.set_index("variant")
    assert sorted(cases.index) == sorted(
        ["eager", "fused", "graph", "graph_fused", "piecewise", "dynamic", "dynamic_fused"]
    )
    assert cases.correct.astype(bool).all()
    for col in ("step_p50_ms", "step_p95_ms", "step_p99_ms", "host_us", "tail_stage"):
        assert cases[col].notna().all(), col
    assert cases.loc["dynamic", "shape"] == "4x12" and cases.loc["graph", "shape"] == "1x8"
    kinds = run.samples.groupby("case").kind.apply(set)
    graph_kinds = kinds["decode.graph.bfloat16.1x8"]
    assert {"device", "host", "probe.device", "probe.norm1", "probe.attention"} <= graph_kinds
    assert "probe.copy_in" in kinds["decode.dynamic.bfloat16.4x12"]
    assert (run.samples[run.samples.kind == "device"].groupby("case").size() == 6).all()
    assert len(run.manifest["dynamic"]["batches"]) == 6
    dyn = run.manifest["dynamic"]
    assert dyn["copy_in"] == "device" and dyn["tail_split"][0]["bucket"] == "all"
    assert "copy_in" in dyn["tail_split"][0]["excess_ms"]
    assert cases.loc["dynamic", "inherent_mix_p95_over_p50"] == dyn["inherent_mix_p95_over_p50"]
    # the same walk with the fused kernels (RMSNorm and decode attention), its own section
    fused = run.manifest["dynamic_fused"]
    assert fused["kernels"] == "fused" and dyn["kernels"] == "eager"
    assert fused["batches"] == dyn["batches"] and fused["lengths"] == dyn["lengths"]
    assert cases.loc["dynamic_fused", "shape"] == "4x12"
    assert "probe.attention" in kinds["decode.dynamic_fused.bfloat16.4x12"]
    assert (
        cases.loc["dynamic_fused", "inherent_mix_p95_over_p50"]
        == fused["inherent_mix_p95_over_p50"]
    )
    assert fused["tail_by_bucket"] != dyn["tail_by_bucket"]  # its own timings, not a copy
    # explain reads each dynamic case's own manifest section
    from profkit.explain import FindingKind, explain_run

    found = {f.variant: f for f in explain_run(run) if f.kind == FindingKind.ITERATIONS}
    for variant, section in (("dynamic", dyn), ("dynamic_fused", fused)):
        top = max(section["tail_by_bucket"], key=lambda b: b["tail_share"])
        ev = found[variant].evidence
        assert ev["tail_bucket_p50_ms"] == top["p50_ms"], variant
    # the goals come last, as pass/fail lines
    goals = done.stdout.split("goals (issue 11")[1].splitlines()[1:]
    assert [line.split()[0] in ("PASS", "FAIL") for line in goals] == [True] * 4
    assert "graph vs eager" in goals[0] and "dynamic p95/p50" in goals[2]
    assert "dynamic_fused p95/p50" in goals[3]
    # the counter pass failed (no permission): stored as timing only, with the reason and the fix
    block = run.manifest["counters"]
    assert block["status"] == "timing_only" and run.timing_only
    assert block["problem"] == "no_permission"
    assert block["reason"] and block["fix"].startswith("Fix:")
    assert (run.path / "ncu.log").is_file()  # kept: it explains the failure
    assert not (run.path / "ncu-job.json").exists()
    # profkit's own counter pass: the worker under ncu, filtered to profkit's push/pop ranges
    ncu_argv = json.loads(argv_file.read_text())
    assert ncu_argv[ncu_argv.index("--nvtx-include") + 1] == "regex:profkit@.+/"
    assert ncu_argv[-3:-1] == ["-m", "profkit.ncu_program"]
    assert run.cases["ncu_duration_ms"].isna().all()  # counter columns present, empty
