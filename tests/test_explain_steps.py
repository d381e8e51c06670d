"""profkit explain on step-latency runs (issue 11): the stored H200 decode run, plus constructed
tables where a test says so.

Expected figures are read here from the stored cases.csv and manifest.json (pandas, json), never
from explain's own code.
"""

from __future__ import annotations

import io
import json
import math
import shutil
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from stored_runs import run_path

from profkit import store
from profkit.explain import Cause, FindingKind, explain_run
from profkit.explain.decode_iterations import iteration_findings
from profkit.explain.phrases import finding_text
from profkit.explain.render import render_terminal, to_json, to_markdown

ROOT = Path(__file__).parents[1]
DECODE = run_path("decode-20261130-164018-vm-d2d4")
RMSNORM = run_path("rmsnorm-20261130-014917-vm-4bc5")


@cache
def decode():
    run = store.load(DECODE)
    return run, explain_run(run)


def step_of(variant: str):
    _, report = decode()
    found = [f for f in report if f.kind == FindingKind.ITERATIONS and f.variant == variant]
    assert len(found) == 1
    return found[0]


def cases() -> pd.DataFrame:
    # read through store.load: the stored run predates the step_* columns (store.upgrade); the
    # run is loaded once (its samples take a second), so read these rows, never change them
    return decode()[0].cases


def manifest() -> dict:
    return json.loads((DECODE / "manifest.json").read_text())


def test_one_step_finding_per_variant_in_the_run():
    _, report = decode()
    got = [f.variant for f in report if f.kind == FindingKind.ITERATIONS]
    assert got == list(dict.fromkeys(cases()["variant"]))


@pytest.mark.parametrize("variant", ["eager", "fused", "graph", "graph_fused", "piecewise"])
def test_distribution_is_the_widest_tail_case(variant):
    mine = cases()[cases()["variant"] == variant]
    worst = mine.loc[mine["step_p95_over_p50"].idxmax()]
    f = step_of(variant)
    ev = f.evidence
    assert f.case == worst["case"]
    for col in ("step_p50_ms", "step_p95_ms", "step_p99_ms"):
        assert ev[col] == pytest.approx(worst[col])
    assert ev["p95_over_p50_ratio"] == pytest.approx(worst["step_p95_over_p50"])
    assert ev["p95_over_p50_min_ratio"] == pytest.approx(mine["step_p95_over_p50"].min())
    assert ev["step_cases"] == len(mine)
    # labelled as step latency, with what it measures
    assert finding_text(f).startswith("Step latency (events around each step")
    assert "not one call's device time" in finding_text(f)
    assert f.reasons[0].cause == Cause.ITERATION_LATENCY
    assert len(f.reasons[0].detail["cases"]) == len(mine)


@pytest.mark.parametrize("variant", ["eager", "graph", "piecewise", "dynamic"])
def test_tail_stage_from_the_probes(variant):
    mine = cases()[(cases()["variant"] == variant) & cases()["tail_stage"].notna()]
    top = mine.loc[mine["step_p95_over_p50"].idxmax()]
    ev = step_of(variant).evidence
    assert ev["tail_stage"] == top["tail_stage"]
    assert ev["tail_stage_excess_us"] == pytest.approx(top["tail_stage_excess_ms"] * 1000)
    assert ev["probed_cases"] == len(mine)
    commonest = mine["tail_stage"].value_counts()
    assert ev["commonest_tail_cases"] == commonest.max()
    assert ev["commonest_tail_stage"] in set(commonest[commonest == commonest.max()].index)
    causes = [r.cause for r in step_of(variant).reasons]
    assert Cause.TAIL_STAGE in causes
    assert f"{top['tail_stage']} runs" in finding_text(step_of(variant))


def test_dynamic_padding_and_tail_bucket():
    row = cases()[cases()["variant"] == "dynamic"].iloc[0]
    buckets = manifest()["dynamic"]["tail_by_bucket"]
    top = max(buckets, key=lambda b: b["tail_share"])
    f = step_of("dynamic")
    ev = f.evidence
    assert ev["pad_waste_pct"] == pytest.approx(row["pad_waste_mean"] * 100)
    assert ev["within_bucket_p95_over_p50_ratio"] == pytest.approx(
        row["within_bucket_p95_over_p50"]
    )
    assert ev["tail_bucket"] == str(top["label"])
    assert ev["tail_bucket_tail_pct"] == pytest.approx(top["tail_share"] * 100)
    padding = next(r for r in f.reasons if r.cause == Cause.PADDING)
    assert [b["label"] for b in padding.detail["buckets"]] == [b["label"] for b in buckets]
    # within a bucket the ratio is below the whole run's: the text says where the tail is
    assert row["within_bucket_p95_over_p50"] < row["step_p95_over_p50"]
    assert "moving between buckets" in finding_text(f)
    # the tail bucket's own median against the run's, and each bucket's own p95/p50
    assert ev["tail_bucket_p50_over_run_ratio"] == pytest.approx(top["p50_ms"] / row["step_p50_ms"])
    within = [b["p95_over_p50"] for b in buckets]
    assert ev["bucket_p95_over_p50_min_ratio"] == pytest.approx(min(within))
    assert ev["bucket_p95_over_p50_max_ratio"] == pytest.approx(max(within))
    assert ev["tail_bucket_p50_over_run_ratio"] > 1
    assert "the larger bucket's extra work" in finding_text(f)
    # no other variant is padded
    assert all(Cause.PADDING not in [r.cause for r in step_of(v).reasons] for v in ("graph",))


def test_the_manifest_note_is_in_the_kernel_section():
    _, report = decode()
    note = manifest()["note"]
    assert report.notes == {"decode": note}
    assert json.loads(to_json(report))["notes"] == {"decode": note}
    md = to_markdown(report)
    assert md.index(f"*Note:* {note}") < md.index("**decode eager: step latency.**")
    buf = io.StringIO()
    render_terminal(report, Console(file=buf, width=400, color_system=None))
    out = buf.getvalue()
    assert f"note: {note}" in out
    assert "decode dynamic  step latency" in out


def test_json_steps_findings_serialise():
    _, report = decode()
    data = json.loads(to_json(report))
    steps = [f for f in data["findings"] if f["kind"] == "steps"]
    assert len(steps) == cases()["variant"].nunique()
    assert {r["cause"] for f in steps for r in f["reasons"]} == {
        "step_latency",
        "tail_stage",
        "padding",
    }


def test_runs_without_step_columns_get_no_step_findings():
    report = explain_run(store.load(RMSNORM))
    assert store.load(RMSNORM).kind == store.CAPTURE
    assert [f for f in report if f.kind == FindingKind.ITERATIONS] == []
    assert report.notes == {}


# --- constructed tables (this test says so: rows typed here, not measured) ----------------------


def _row(variant: str, shape: str, p50: float, p95: float, p99: float, **more) -> dict:
    return {
        "kernel": "k",
        "variant": variant,
        "dtype": "float32",
        "shape": shape,
        "case": f"k.{variant}.float32.{shape}",
        "step_p50_ms": p50,
        "step_p95_ms": p95,
        "step_p99_ms": p99,
        "step_p95_over_p50": p95 / p50,
        "tail_stage": math.nan,
        **more,
    }


def test_constructed_table_without_probes_or_padding():
    rows = [
        _row("a", "1x1", 1.0, 1.1, 1.2),
        _row("a", "2x1", 1.0, 1.5, 2.0),
        _row("b", "1x1", 2.0, 2.2, 2.4),
        _row("b", "2x1", 2.0, math.nan, math.nan),  # untimed: left out
    ]
    assert store.run_kind({}, pd.DataFrame(rows)) == store.DECODE
    found = iteration_findings("k", rows, {})
    assert [f.variant for f in found] == ["a", "b"]
    a, b = found
    assert a.shape == "2x1" and a.evidence["p95_over_p50_ratio"] == pytest.approx(1.5)
    assert [r.cause for r in a.reasons] == [Cause.ITERATION_LATENCY]
    assert "Where the tail comes from" not in finding_text(a) and "Padding" not in finding_text(a)
    assert b.evidence["step_cases"] == 1 and "over 1 cases" not in finding_text(b)


def test_constructed_table_no_p99_is_not_a_step_run():
    rows = [_row("a", "1x1", 1.0, 1.1, math.nan)]
    assert store.run_kind({}, pd.DataFrame(rows)) == store.CAPTURE
    assert store.run_kind({}, pd.DataFrame(rows).drop(columns=["tail_stage"])) == store.CAPTURE


def test_constructed_padding_without_a_bucket_table():
    rows = [_row("dyn", "8x1", 1.0, 1.1, 1.2, pad_waste_mean=0.25, within_bucket_p95_over_p50=1.3)]
    (f,) = iteration_findings("k", rows, {"note": "n"})
    assert f.evidence["pad_waste_pct"] == pytest.approx(25.0)
    assert "tail_bucket" not in f.evidence
    # within a bucket wider than overall: no claim that the walk between buckets makes the tail
    assert "moving between buckets" not in finding_text(f)


def test_stored_step_latency_is_read_under_the_step_names():
    raw = pd.read_csv(DECODE / "cases.csv", dtype={"shape": str})
    assert "step_p50_ms" not in raw.columns  # stored before the step_* columns
    read = cases()
    assert read["device_p50_ms"].isna().all()  # no single call's device time was measured
    assert read["step_p50_ms"].tolist() == pytest.approx(raw["device_p50_ms"].tolist())
    assert read["step_p99_ms"].tolist() == pytest.approx(raw["device_p99_ms"].tolist())


def test_verdicts_weigh_step_latency_and_say_so():
    from profkit.explain.phrases import verdict_text

    _, report = decode()
    by = {v.variant: v for v in report.verdicts}
    assert set(by) == {"fused", "graph", "graph_fused", "piecewise", "dynamic"}
    assert by["graph"].evidence["measure"] == "step latency"
    assert "a win on step latency" in verdict_text(by["graph"])
    # graph vs eager at 1x512 from the stored columns: the verdict's largest win
    raw = pd.read_csv(DECODE / "cases.csv", dtype={"shape": str}).set_index(["variant", "shape"])
    ratio = (
        raw.loc[("eager", "1x512"), "device_p50_ms"] / raw.loc[("graph", "1x512"), "device_p50_ms"]
    )
    assert by["graph"].evidence["best_win_x"] == pytest.approx(ratio, rel=0.05)


def test_history_compares_step_runs_on_step_latency(tmp_path):
    from profkit.explain.history import history_finding

    later = tmp_path / "decode-20261130-180000-vm-0000"
    shutil.copytree(DECODE, later)
    m = json.loads((later / "manifest.json").read_text())
    m.update(run_id=later.name, created="2026-11-30T18:00:00+00:00")
    (later / "manifest.json").write_text(json.dumps(m))
    found, _ = history_finding(store.load(later), store.load(DECODE), "graph")
    assert found is not None  # device_p50_ms is empty in both: compared on step latency
    assert found.evidence["cases_compared"] == 9
    assert found.evidence["cases_noise"] == 9  # the same samples twice
