"""profkit dashboard on the newest committed H200 run: one offline HTML page per run.

Expected values are read from the stored tables here (pandas on cases.csv, the manifest's JSON),
never from the dashboard's own code.
"""

from __future__ import annotations

import html
import json
import shutil
from functools import cache
from pathlib import Path

import pandas as pd
import plotly.offline
import pytest

from profkit import dashboard, store
from profkit.errors import ProfkitError
from profkit.explain import Finding, explain_run

PROFILES = Path(__file__).parents[1] / "profiles"
LAB = "triton"  # the lab's fused kernel; the other variants are baselines
# the first characters of the bundled plotly.js: a page holding the library twice has them twice
PLOTLYJS_MARK = plotly.offline.get_plotlyjs()[:200]
COUNTER_COLUMNS = ("dram_throughput_pct", "achieved_occupancy_pct", "kernel_count", "dram_bytes")


def newest() -> Path:
    return store.resolve(None, PROFILES)


@cache
def built() -> tuple[store.Run, tuple[Finding, ...], str]:
    run = store.load(newest())
    findings = tuple(explain_run(run))
    return run, findings, dashboard.build_dashboard(run, findings)


@cache
def figs() -> tuple:
    return tuple(dashboard.figures(built()[0]))


def cases() -> pd.DataFrame:
    return store.load(newest()).cases


def traces_of(fig, variant: str) -> list:
    return [t for t in fig.data if t.legendgroup == variant]


def plotted(fig, variant: str, df: pd.DataFrame, dtype: str) -> list:
    """The y values of variant's trace in dtype's panel (panels run in the sweep's dtype order)."""
    dtypes = list(dict.fromkeys(df["dtype"]))
    return list(traces_of(fig, variant)[dtypes.index(dtype)].y)


def test_header_names_the_run_and_puts_the_verdict_first() -> None:
    run, findings, page = built()
    manifest = json.loads((newest() / store.MANIFEST).read_text())
    assert run.run_id in page and manifest["run_id"] == run.run_id
    assert manifest["fingerprint"]["gpu"] in page
    assert f"{manifest['ceilings']['copy_gbps']:g} GB/s" in page
    assert f"{manifest['ceilings']['matmul_tflops']:g} TFLOP/s" in page
    verdicts = [f for f in findings if f.kind == "verdict"]
    assert verdicts
    first_plot = page.index("plotly-graph-div")
    for f in verdicts:
        assert 0 <= page.index(html.escape(f.text)) < first_plot


def test_one_copy_of_plotlyjs_and_every_figure_on_the_page() -> None:
    run, _, page = built()
    assert len(PLOTLYJS_MARK) == 200 and page.count(PLOTLYJS_MARK) == 1
    assert page.count('class="plotly-graph-div"') == len(figs()) == 4
    assert "<script src=" not in page  # offline: no script fetched from the network


def test_latency_traces_are_cases_csv() -> None:
    run, _, page = built()
    df = cases()
    latency = figs()[0]
    for variant in df["variant"].unique():
        assert len(traces_of(latency, variant)) == df["dtype"].nunique()
    row = df[(df.variant == LAB) & (df.dtype == "float16") & (df["shape"] == "16384x8192")].iloc[0]
    ys = plotted(latency, LAB, df, "float16")
    assert row.device_p50_ms in ys
    assert json.dumps(float(row.device_p50_ms)) in page  # as plotly writes it into the page
    # the error bars span p5..p95 of the same row
    trace = traces_of(latency, LAB)[0]
    k = ys.index(row.device_p50_ms)
    assert trace.error_y.array[k] == pytest.approx(row.device_p95_ms - row.device_p50_ms)
    assert trace.error_y.arrayminus[k] == pytest.approx(row.device_p50_ms - row.device_p5_ms)
    assert trace.customdata[k][0] == row.case  # hover names the case
    assert latency.layout.yaxis.type == "log"


def test_lab_kernel_stands_apart_from_baselines() -> None:
    run, _, _ = built()
    df = cases()
    latency = figs()[0]
    baselines = df.loc[df.baseline, "variant"].unique()
    lab = traces_of(latency, LAB)[0]
    assert "lab" in lab.name and lab.marker.color
    for variant in baselines:
        base = traces_of(latency, variant)[0]
        assert "baseline" in base.name
        assert (base.marker.color, base.marker.symbol) != (lab.marker.color, lab.marker.symbol)
        assert base.marker.color != lab.marker.color


def test_bandwidth_and_counter_panels_are_cases_csv() -> None:
    run, _, page = built()
    df = cases()
    _, bandwidth, counters, fusion = figs()
    for variant in df["variant"].unique():
        for dtype in df["dtype"].unique():
            sub = df[(df.variant == variant) & (df.dtype == dtype)].set_index("shape")
            assert set(plotted(bandwidth, variant, df, dtype)) == set(sub.pct_peak_bw)
    # fusion evidence: per case, kernel counts and DRAM bytes straight from the joined counters
    eager = [t for t in traces_of(fusion, "eager") if t.y is not None]
    plotted_counts = {y for t in eager for y in t.y}
    assert set(df.loc[df.variant == "eager", "kernel_count"]) <= plotted_counts
    assert set(df.loc[df.variant == "eager", "dram_bytes"]) <= plotted_counts
    dram = {y for t in traces_of(counters, LAB) for y in t.y}
    assert set(df.loc[df.variant == LAB, "dram_throughput_pct"]) <= dram
    assert set(df.loc[df.variant == LAB, "achieved_occupancy_pct"]) <= dram
    assert "DRAM throughput" in page and "kernels per case" in page


def test_findings_table_lists_every_case_finding() -> None:
    _, findings, page = built()
    table = page[page.index("<table class='findings'>") :]
    per_case = [f for f in findings if f.kind == "case"]
    assert len(per_case) == len(cases())
    for f in per_case:
        assert html.escape(f.text) in table and html.escape(f.subject) in table


def copy_run(tmp_path: Path) -> Path:
    dest = tmp_path / newest().name
    shutil.copytree(newest(), dest, ignore=shutil.ignore_patterns("*.ncu-rep*"))
    return dest


def test_timing_only_run_builds_shows_the_reason_and_no_counter_panels(tmp_path: Path) -> None:
    path = copy_run(tmp_path)
    (path / store.KERNELS).unlink()
    (path / store.RULES).unlink()
    manifest = json.loads((path / store.MANIFEST).read_text())
    reason = "ncu <pid 42> lacks permission to read GPU counters & ERR_NVGPUCTRPERM"
    manifest["counters"].update(status="timing_only", problem="no_permission", reason=reason)
    (path / store.MANIFEST).write_text(json.dumps(manifest))
    run = store.load(path)
    figs = dashboard.figures(run)
    page = dashboard.build_dashboard(run, explain_run(run))
    assert html.escape(reason) in page and reason not in page  # shown, and escaped
    assert len(figs) == 2 and dashboard.counter_figures(run) == []
    titles = {a.text for f in figs for a in f.layout.annotations}
    assert not any("DRAM" in t or "occupancy" in t or "kernels" in t for t in titles)
    assert page.count('class="plotly-graph-div"') == 2 and page.count(PLOTLYJS_MARK) == 1
    assert "DRAM throughput" not in page


@pytest.mark.parametrize("timing_kept", [False, True], ids=["as-stored", "timing-kept"])
def test_an_incorrect_case_is_marked_not_plotted_as_fast(tmp_path: Path, timing_kept: bool) -> None:
    path = copy_run(tmp_path)
    df = store.load(path).cases  # read as the current schema, written back the same way
    bad = "rmsnorm.eager.bfloat16.4096x4096"
    i = df.index[df.case == bad][0]
    df["error"] = df["error"].astype(object)
    df.loc[i, ["correct", "error"]] = [False, "max_abs_err 0.5 > atol 0.01"]
    timing = [
        "device_p50_ms",
        "device_p95_ms",
        "device_p5_ms",
        "device_iqr_ms",
        "gbps",
        "tflops",
        "pct_peak_bw",
    ]
    if not timing_kept:  # as a capture stores an incorrect variant; a foreign table may not
        df.loc[i, timing] = None
    df.to_csv(path / store.CASES, index=False)
    run = store.load(path)
    latency, bandwidth = dashboard.figures(run)[:2]
    for fig in (latency, bandwidth):
        marks = [t for t in fig.data if t.legendgroup == "incorrect"]
        assert [c[0] for t in marks for c in t.customdata] == [bad]
        assert marks[0].marker.symbol == "x"
    eager_bf16 = plotted(latency, "eager", df, "bfloat16")
    assert eager_bf16.count(None) == 1
    assert None in plotted(bandwidth, "eager", df, "bfloat16")
    # the mark sits at the panel's slowest p95, never below a timed case
    panel = df[(df.dtype == "bfloat16")]
    mark = next(t for t in latency.data if t.legendgroup == "incorrect")
    assert mark.y[0] == panel.device_p95_ms.max()
    page = dashboard.build_dashboard(run, explain_run(run))
    assert "<tr class='incorrect'>" in page


def test_write_dashboard_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, _, _ = built()
    target = tmp_path / "out" / "nested" / "dash.html"
    assert dashboard.write_dashboard(run, target) == target
    assert list(target.parent.iterdir()) == [target]  # no temp file left behind
    assert target.read_text().startswith("<!doctype html>") and run.run_id in target.read_text()

    target.write_text("previous page")

    def broken(*_args: object) -> str:
        raise RuntimeError("build failed")

    monkeypatch.setattr(dashboard, "build_dashboard", broken)
    with pytest.raises(RuntimeError):
        dashboard.write_dashboard(run, target)
    assert target.read_text() == "previous page" and list(target.parent.iterdir()) == [target]


def test_a_failed_write_keeps_the_old_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, _, page = built()
    target = tmp_path / "dash.html"
    target.write_text("previous page")
    monkeypatch.setattr(dashboard, "build_dashboard", lambda *_: page)

    def no_space(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dashboard.os, "replace", no_space)
    with pytest.raises(ProfkitError, match="No space left on device"):
        dashboard.write_dashboard(run, target)
    assert target.read_text() == "previous page" and list(tmp_path.iterdir()) == [target]
