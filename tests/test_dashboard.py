"""profkit dashboard on the committed H200 runs: one offline HTML page of one or more runs.

Expected values are read from the stored tables here (pandas on cases.csv and kernels.csv, the
manifest's JSON, profkit.stats on the same rows), never from the dashboard's own code. Tests
that change a run (a host-cost column, samples, a hostile name, an L2 ceiling) say so: those tables
are constructed, on a copy of a real run.
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.offline
import pytest
from click.testing import CliRunner
from stored_runs import v1_v2_profiles

from profkit import dashboard, run_kinds, stats, store
from profkit.cli import cli
from profkit.dashboard import findings_view, history, host, launches, page, roofline, speedup
from profkit.errors import ProfkitError
from profkit.explain import Finding, explain_run
from profkit.explain.phrases import finding_text

ROOT = Path(__file__).parents[1]
PROFILES = v1_v2_profiles()  # the two schema-1 RMSNorm runs alone
LAB = "triton"  # the lab's fused kernel; the other variants are baselines
# the first characters of the bundled plotly.js: a page holding the library twice has them twice
PLOTLYJS_MARK = plotly.offline.get_plotlyjs()[:200]
NEWPLOT = re.compile(r'Plotly\.newPlot\("([^"]+)"')


def newest() -> Path:
    return store.resolve(None, PROFILES)


@cache
def stored() -> tuple[store.Run, ...]:
    return tuple(store.load(p) for p in store.list_runs(PROFILES))


@cache
def built() -> tuple[store.Run, tuple[Finding, ...], str]:
    run = store.load(newest())
    findings = tuple(explain_run(run))
    return run, findings, page_of([run], stored())


def page_of(runs, history_runs=(), plotlyjs: str = "inline") -> str:
    findings = {r.run_id: explain_run(r) for r in runs}
    return dashboard.build_dashboard(runs, findings, history_runs, plotlyjs)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each stored run's page, written once as `profkit dashboard RUN_ID` writes it."""
    folder = tmp_path_factory.mktemp("pages")
    return {
        r.run_id: run_kinds.write_dashboard(r, folder / f"{r.run_id}.html", stored())
        for r in stored()
    }


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


def copy_run(tmp_path: Path, src: Path | None = None, name: str | None = None) -> Path:
    src = src or newest()
    dest = tmp_path / (name or src.name)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.ncu-rep*"))
    if name:
        edit_manifest(dest, run_id=name)
    return dest


def edit_manifest(path: Path, **changes) -> dict:
    manifest = json.loads((path / store.MANIFEST).read_text())
    manifest.update(changes)
    (path / store.MANIFEST).write_text(json.dumps(manifest))
    store.seal(path)  # a constructed run vouches for its edited files (else it reads as damaged)
    return json.loads((path / store.MANIFEST).read_text())


def row(df: pd.DataFrame, variant: str, dtype: str, shape: str) -> pd.Series:
    return df[(df.variant == variant) & (df.dtype == dtype) & (df["shape"] == shape)].iloc[0]


# --- the page --------------------------------------------------------------------------------


def test_header_names_the_run_and_puts_the_verdict_first() -> None:
    run, findings, text = built()
    manifest = json.loads((newest() / store.MANIFEST).read_text())
    assert run.run_id in text and manifest["run_id"] == run.run_id
    assert manifest["fingerprint"]["gpu"] in text
    assert f"{manifest['ceilings']['copy_gbps']:g} GB/s" in text
    assert f"{manifest['ceilings']['matmul_tflops']:g} TFLOP/s" in text
    verdicts = [f for f in findings if f.kind == "verdict"]
    assert verdicts
    first_plot = text.index("plotly-graph-div")
    for f in verdicts:
        assert 0 <= text.index(html.escape(finding_text(f))) < first_plot


def test_one_copy_of_plotlyjs_and_every_view_drawn_once() -> None:
    _, _, text = built()
    assert len(PLOTLYJS_MARK) == 200 and text.count(PLOTLYJS_MARK) == 1
    ids = NEWPLOT.findall(text)
    assert ids == [
        "run0-plot-speedup",
        "run0-plot-best-peer",  # three baselines: the lab against the fastest at each case
        "run0-plot-roofline",
        "run0-plot-launches",  # no host-cost plot: this schema-1 run has no host_us
        "run0-plot-latency",
        "run0-plot-bandwidth",
        "run0-plot-counters0",
        "run0-plot-counters1",
        "history0-plot",
    ]
    for div_id in ids:  # one div per plot, and no other element shares its id
        assert text.count(f'id="{div_id}"') == 1 and text.count(f"id='{div_id}'") == 0
    assert text.count('class="plotly-graph-div"') == len(ids)
    # the theme is sent once for the page, not once per plot
    assert text.count("var PROFKIT_TEMPLATE = ") == 1 and '"template":' not in text
    assert text.count("Object.assign({template:PROFKIT_TEMPLATE}") == len(ids)
    assert "<script src=" not in text  # inline: no script fetched from anywhere


def test_shared_plotlyjs_is_referenced_relatively_and_written_beside_the_page(
    written: dict[str, Path],
) -> None:
    target = written[newest().name]
    text = target.read_text()
    assert PLOTLYJS_MARK not in text
    assert re.findall(r"<script src=\"([^\"]*)\"", text) == [dashboard.PLOTLY_ASSET]
    assert (target.parent / dashboard.PLOTLY_ASSET).read_text() == plotly.offline.get_plotlyjs()
    assert not re.search(r"(src|href)=['\"](https?:)?//", text)  # nothing from the network
    assert len(text) < 600_000  # the page without the library stays small


def test_a_fresh_process_writes_the_same_bytes(tmp_path: Path, written: dict[str, Path]) -> None:
    """Same runs, same bytes: the page `profkit dashboard` writes in another process is
    byte-for-byte the page written here, plotly.min.js too (a regenerated page never churns)."""
    run = store.load(newest())
    here = written[run.run_id]
    argv = [sys.executable, "-m", "profkit", "dashboard", run.run_id, "--profiles", str(PROFILES)]
    argv += ["--out", str(tmp_path / "there" / "page.html")]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    there = tmp_path / "there"
    assert (there / "page.html").read_bytes() == here.read_bytes()
    asset = dashboard.PLOTLY_ASSET
    assert (there / asset).read_bytes() == (here.parent / asset).read_bytes()


def test_latency_traces_are_cases_csv() -> None:
    run, _, text = built()
    df = cases()
    latency = figs()[0]
    for variant in df["variant"].unique():
        assert len(traces_of(latency, variant)) == df["dtype"].nunique()
    r = row(df, LAB, "float16", "16384x8192")
    ys = plotted(latency, LAB, df, "float16")
    assert r.device_p50_ms in ys
    assert json.dumps(float(r.device_p50_ms)) in text  # as the page's JSON writes it
    trace = traces_of(latency, LAB)[0]
    k = ys.index(r.device_p50_ms)
    assert trace.error_y.array[k] == pytest.approx(r.device_p95_ms - r.device_p50_ms)
    assert trace.error_y.arrayminus[k] == pytest.approx(r.device_p50_ms - r.device_p5_ms)
    assert trace.customdata[k][0] == r.case  # hover names the case
    assert latency.layout.yaxis.type == "log"


def test_lab_kernel_stands_apart_from_baselines() -> None:
    df = cases()
    latency = figs()[0]
    baselines = df.loc[df.baseline, "variant"].unique()
    lab = traces_of(latency, LAB)[0]
    assert "lab" in lab.name and lab.marker.color
    for variant in baselines:
        base = traces_of(latency, variant)[0]
        assert "baseline" in base.name
        assert base.marker.color != lab.marker.color


def test_bandwidth_and_counter_panels_are_cases_csv() -> None:
    _, _, text = built()
    df = cases()
    _, bandwidth, counters, fusion = figs()
    for variant in df["variant"].unique():
        for dtype in df["dtype"].unique():
            sub = df[(df.variant == variant) & (df.dtype == dtype)].set_index("shape")
            assert set(plotted(bandwidth, variant, df, dtype)) == set(sub.pct_peak_bw)
    eager = [t for t in traces_of(fusion, "eager") if t.y is not None]
    plotted_counts = {y for t in eager for y in t.y}
    assert set(df.loc[df.variant == "eager", "kernel_count"]) <= plotted_counts
    assert set(df.loc[df.variant == "eager", "dram_bytes"]) <= plotted_counts
    dram = {y for t in traces_of(counters, LAB) for y in t.y}
    assert set(df.loc[df.variant == LAB, "dram_throughput_pct"]) <= dram
    assert "DRAM throughput" in text and "kernels per case" in text


def pair(points: list, baseline: str, dtype: str, shape: str) -> speedup.Speedup:
    return next(p for p in points if (p.baseline, p.dtype, p.shape) == (baseline, dtype, shape))


# --- speedup -------------------------------------------------------------------------------------


def test_speedup_is_baseline_over_lab_device_time_with_the_stats_interval() -> None:
    run, _, text = built()
    df = cases()
    points = speedup.speedups(run)
    n_pairs = (df.variant == LAB).sum() * df.loc[df.baseline, "variant"].nunique()
    assert len(points) == n_pairs  # every case of this run is correct and timed
    lab, base = row(df, LAB, "float16", "4096x8192"), row(df, "eager", "float16", "4096x8192")
    c = stats.compare_cases(lab.to_dict(), base.to_dict())
    p = next(
        p for p in points if (p.baseline, p.dtype, p.shape) == ("eager", "float16", "4096x8192")
    )
    assert p.speedup == pytest.approx(base.device_p50_ms / lab.device_p50_ms)
    assert (p.low, p.high) == pytest.approx((1 / c.ci_high, 1 / c.ci_low))
    assert p.method == "normal approximation"  # schema 1: no samples
    fig = speedup.speedup_figure(run, points)
    trace = next(
        t for t in fig.data if t.name == f"{LAB} over eager" and t.xaxis in ("x", None, "x1")
    )
    k = list(trace.y).index(p.speedup)
    assert trace.error_y.array[k] == pytest.approx(p.high - p.speedup)
    assert trace.error_y.arrayminus[k] == pytest.approx(p.speedup - p.low)
    assert trace.text[k] == f"{p.speedup:.2g}x"  # readable without hovering
    for q, symbol in zip([q for q in points if q.baseline == "eager" and q.dtype == "float16"],
                         trace.marker.symbol, strict=True):  # fmt: skip
        assert symbol.endswith("-open") == (q.outcome not in ("faster", "slower"))
    assert fig.layout.yaxis.type == "log"
    assert "normal approximation" in text and "schema-1" in text


def test_speedup_bootstraps_when_the_run_kept_samples(tmp_path: Path) -> None:
    """Constructed samples (a normal spread around each stored p50) on a copy of the run."""
    path = copy_run(tmp_path)
    df = store.load(path).cases
    keep = df[(df.dtype == "float16") & df["shape"].isin(["4096x4096", "4096x8192"])]
    rng = np.random.default_rng(0)
    samples = [
        (case, "device", float(t))
        for case, p50 in zip(keep.case, keep.device_p50_ms, strict=True)
        for t in p50 * (1 + 0.01 * rng.standard_normal(40))
    ]
    pd.DataFrame(samples, columns=["case", "kind", "ms"]).to_csv(path / store.SAMPLES, index=False)
    run = store.load(path)
    points = speedup.speedups(run)
    methods = {(p.dtype, p.shape): p.method for p in points}
    assert methods[("float16", "4096x8192")] == "bootstrap"
    assert methods[("float32", "4096x8192")] == "normal approximation"  # no samples there
    p = next(
        p for p in points if (p.baseline, p.dtype, p.shape) == ("eager", "float16", "4096x4096")
    )
    s = run.samples
    lab = s.loc[s.case == p.lab_case, "ms"].to_numpy()
    base = s.loc[s.case == p.baseline_case, "ms"].to_numpy()
    c = stats.compare_samples(lab, base)
    assert (p.speedup, p.low, p.high) == pytest.approx((1 / c.ratio, 1 / c.ci_high, 1 / c.ci_low))


# --- roofline ------------------------------------------------------------------------------------


def test_roofs_come_from_the_manifest_or_are_labelled_derived() -> None:
    run, _, text = built()
    m = run.manifest
    fp, ceil = m["fingerprint"], m["ceilings"]
    by_name = {r.name: r for r in roofline.roofs(run, "bfloat16")[0]}
    assert by_name["DRAM"].value == ceil["copy_gbps"] and by_name["DRAM"].measured
    assert by_name["BF16 Tensor Core"].value == ceil["matmul_tflops"]
    assert by_name["BF16 Tensor Core"].measured
    assert "L2" not in by_name  # not measured by this run, and no datasheet number is typed in
    fp16, missing = roofline.roofs(run, "float16")
    tc = next(r for r in fp16 if r.name == "FP16 Tensor Core")
    clock = float(fp["clocks_mhz"]["max_sm"])
    assert not tc.measured and "derived" in tc.label
    assert tc.value == pytest.approx(fp["sm_count"] * 4096 * clock * 1e6 / 1e12)
    fma = next(r for r in fp16 if r.name == "FP32 FMA")
    assert not fma.measured and fma.value == pytest.approx(fp["sm_count"] * 256 * clock / 1e6)
    assert any(m.startswith("L2") for m in missing)
    assert "Roof not drawn: L2" in text


def test_roofs_use_a_measured_l2_and_leave_out_what_cannot_be_derived(tmp_path: Path) -> None:
    """Constructed manifests: an L2 ceiling added; then the fingerprint's SM count removed."""
    path = copy_run(tmp_path)
    manifest = json.loads((path / store.MANIFEST).read_text())
    edit_manifest(path, ceilings={**manifest["ceilings"], "l2_gbps": 9999.5})
    l2 = next(r for r in roofline.roofs(store.load(path), "float16")[0] if r.name == "L2")
    assert l2.value == 9999.5 and l2.measured
    edit_manifest(path, fingerprint={**manifest["fingerprint"], "sm_count": None})
    names, missing = roofline.roofs(store.load(path), "float16")
    assert [r.name for r in names] == ["DRAM", "L2"]
    assert any("FP32 FMA" in m for m in missing) and any("FP16 Tensor Core" in m for m in missing)


def test_every_timed_case_is_a_roofline_point_with_its_counters_on_hover() -> None:
    run, _, _ = built()
    df = cases()
    fig, _ = roofline.roofline_figure(run)
    marks = [t for t in fig.data if t.mode == "markers"]
    assert sum(len(t.x) for t in marks) == len(df)
    r = row(df, LAB, "bfloat16", "4096x8192")
    trace = next(
        t for t in marks if t.legendgroup == LAB and r.case in [c[0] for c in t.customdata]
    )
    k = [c[0] for c in trace.customdata].index(r.case)
    assert trace.x[k] == pytest.approx(r.flops / r.dram_bytes)
    assert trace.y[k] == pytest.approx(r.flops / (r.device_p50_ms * 1e-3) / 1e12)
    assert r.dram_throughput_pct in trace.customdata[k]
    assert "DRAM throughput" in trace.hovertemplate and "L2 hit rate" in trace.hovertemplate
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


# --- host cost -----------------------------------------------------------------------------------


def test_a_schema_1_run_shows_a_note_instead_of_an_empty_host_plot() -> None:
    run, _, text = built()
    assert host.host_figure(run) is None
    assert "no host cost in this run (schema 1" in text


def test_host_cost_against_device_time(tmp_path: Path) -> None:
    """Constructed host_us (twice the device time, for eager only) on a copy of the run."""
    path = copy_run(tmp_path)
    df = store.load(path).cases
    df["host_us"] = np.where(df.variant == "eager", df.device_p50_ms * 2e3, np.nan)
    df.to_csv(path / store.CASES, index=False)
    edit_manifest(path, schema=2)
    fig = host.host_figure(store.load(path))
    points = [t for t in fig.data if t.mode == "markers"]
    assert [t.legendgroup for t in points] == ["eager"]
    eager = df[df.variant == "eager"]
    assert list(points[0].x) == pytest.approx(list(eager.device_p50_ms * 1e3))
    assert list(points[0].y) == pytest.approx(list(eager.host_us))


# --- per-launch drill-down -----------------------------------------------------------------------


def test_drill_down_splits_each_multi_kernel_case_into_its_launches() -> None:
    run, _, _ = built()
    k = run.kernels
    n = k.groupby("case").size()
    multi = set(n[n > 1].index)
    fig = launches.launches_figure(run)
    bars = [t for t in fig.data if t.type == "bar" and t.x is not None and t.x[0] is not None]
    total: dict[str, float] = {}
    first: dict[str, str] = {}
    for t in bars:
        for case, x, data in zip(t.y, t.x, t.customdata, strict=True):
            total[case] = total.get(case, 0.0) + x
            if t.name == "launch 1":
                first[case] = data[1]  # the kernel name, first hover line after the case
    assert set(total) == multi
    sums = k.groupby("case")["ncu_duration_ms"].sum() * 1e3
    for case in multi:
        assert total[case] == pytest.approx(sums[case])
        launches_of = k[k.case == case].sort_values("launch")
        assert first[case] == launches_of.kernel_name.iloc[0]


# --- history -------------------------------------------------------------------------------------


def test_history_compares_consecutive_runs_case_by_case() -> None:
    older, newer = stored()
    h = history.history("rmsnorm", list(stored()))
    assert [r.run_id for r in h.runs] == [older.run_id, newer.run_id]
    (change,) = h.changes
    a, b = older.cases.set_index("case"), newer.cases.set_index("case")
    common = a.index.intersection(b.index)
    assert sum(change.counts.values()) == len(common)
    labs = [m for m in change.moved if m["lab"]]
    assert change.moved[: len(labs)] == labs  # the lab's own cases first
    top = labs[0]
    assert top["ratio"] == pytest.approx(
        b.loc[top["case"], "device_p50_ms"] / a.loc[top["case"], "device_p50_ms"]
    )
    c = stats.compare_cases(b.loc[top["case"]].to_dict(), a.loc[top["case"]].to_dict())
    assert top["outcome"] == c.outcome != "noise"
    assert all(abs(math.log(m["ratio"])) <= abs(math.log(top["ratio"])) for m in labs)


def test_history_names_what_changed_between_two_runs(tmp_path: Path) -> None:
    """Constructed: a copy of the newest run, later, with another torch and a recorded commit."""
    newer = stored()[-1]
    path = copy_run(tmp_path, name="rmsnorm-later")
    fp = {**newer.manifest["fingerprint"], "torch": "9.9.9"}
    edit_manifest(path, created="2099-01-01T00:00:00+00:00", fingerprint=fp, git_commit="abc123")
    later = store.load(path)
    h = history.history("rmsnorm", [*stored(), later])
    assert [r.run_id for r in h.runs][-1] == "rmsnorm-later"
    changes = h.changes[-1].differences
    assert ("fingerprint.torch", newer.manifest["fingerprint"]["torch"], "9.9.9") in changes
    assert ("git_commit", "None", "abc123") in changes
    assert not any(what in ("created", "run_id") for what, _, _ in changes)
    same = len(later.cases)  # identical timings: every case is noise
    assert h.changes[-1].counts == {"faster": 0, "slower": 0, "noise": same, "unstable": 0}


def test_a_page_shows_history_up_to_its_own_run(written: dict[str, Path]) -> None:
    older, newer = stored()
    text = written[newer.run_id].read_text()
    assert f"{html.escape(older.run_id)} &rarr; {html.escape(newer.run_id)}" in text
    old_page = written[older.run_id].read_text()
    assert "One timed run of rmsnorm stored" in old_page and newer.run_id not in old_page


# --- findings table ------------------------------------------------------------------------------


def test_findings_table_lists_every_finding_with_its_filters() -> None:
    run, findings, text = built()
    table = text[text.index("<table class='findings'") :]
    assert table.count("<tr ") + table.count("<tr class='incorrect' ") == len(findings)
    for f in findings:
        assert html.escape(finding_text(f)) in table
    rows = findings_view.finding_rows(run, findings)
    df = cases().set_index("case")
    for r, f in zip(rows, findings, strict=True):
        if f.kind == "case":
            assert (r["dtype"], r["shape"]) == (df.loc[f.case, "dtype"], df.loc[f.case, "shape"])
    selects = re.findall(r"data-key='(\w+)'", text)
    assert selects == ["kernel", "dtype", "variant"]  # one run: no run filter
    for dtype in cases()["dtype"].unique():
        assert f"<option value='{dtype}'>" in text


def test_names_are_data_never_markup(tmp_path: Path) -> None:
    """A constructed copy of the run whose kernel and one variant carry markup in their names."""
    evil_variant = "<script>alert(1)</script>"
    evil_kernel = "rms<img src=x onerror=alert(2)>"
    path = copy_run(tmp_path)
    df = store.load(path).cases
    df["variant"] = df["variant"].replace("native", evil_variant)
    df["kernel"] = evil_kernel
    df["case"] = df["case"].str.replace(".native.", f".{evil_variant}.", regex=False)
    df.to_csv(path / store.CASES, index=False)
    store.table_file(path, store.KERNELS).unlink()
    store.table_file(path, store.RULES).unlink()
    edit_manifest(path, kernel=evil_kernel)
    text = page_of([store.load(path)])
    assert "<script>alert" not in text and "<img src=x" not in text
    assert html.escape(evil_variant) in text  # shown in the table as text
    assert "\\u003cscript\\u003ealert(1)" in text  # and in the figures' JSON, escaped


# --- files and the command line ------------------------------------------------------------------


def test_write_dashboard_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, _, _ = built()
    target = tmp_path / "out" / "nested" / "dash.html"
    assert run_kinds.write_dashboard(run, target) == target
    assert sorted(target.parent.iterdir()) == sorted([target, target.parent / "plotly.min.js"])
    assert target.read_text().startswith("<!doctype html>") and run.run_id in target.read_text()

    target.write_text("previous page")

    def broken(*_args: object) -> str:
        raise RuntimeError("build failed")

    monkeypatch.setattr(page, "build_dashboard", broken)
    with pytest.raises(RuntimeError):
        run_kinds.write_dashboard(run, target)
    assert target.read_text() == "previous page" and len(list(target.parent.iterdir())) == 2


def test_a_failed_write_keeps_the_old_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, _, text = built()
    target = tmp_path / "dash.html"
    target.write_text("previous page")
    monkeypatch.setattr(page, "build_dashboard", lambda *_: text)

    def no_space(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(page.os, "replace", no_space)
    with pytest.raises(ProfkitError, match="No space left on device"):
        run_kinds.write_dashboard(run, target, plotlyjs="inline")
    assert target.read_text() == "previous page" and list(tmp_path.iterdir()) == [target]


def test_cli_writes_one_page_for_several_runs_and_kernels(tmp_path: Path) -> None:
    """`profkit dashboard OLDER --kernel rmsnorm`: both runs, each with its own plots, and a run
    filter on the findings."""
    older, newer = stored()
    out = tmp_path / "pr.html"
    args = ["dashboard", older.run_id, "--kernel", "rmsnorm", "--profiles", str(PROFILES)]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert f"<h2>{older.run_id}</h2>" in text and f"<h2>{newer.run_id}</h2>" in text
    assert re.findall(r"data-key='(\w+)'", text) == ["run", "kernel", "dtype", "variant"]
    ids = NEWPLOT.findall(text)
    assert "run0-plot-speedup" in ids and "run1-plot-speedup" in ids
    assert len(ids) == len(set(ids))
    assert (tmp_path / dashboard.PLOTLY_ASSET).is_file()
    bad = CliRunner().invoke(cli, ["dashboard", "--kernel", "ghost", "--profiles", str(PROFILES)])
    assert bad.exit_code != 0
    said = bad.output.strip().splitlines()[-1]
    assert said.startswith("error: no run named 'ghost' (looked for a directory, a run id and a ")
    assert said.endswith(f"kernel's runs under {PROFILES}/)")


def test_a_few_hundred_cases_build_in_seconds(tmp_path: Path) -> None:
    """Constructed: the stored run's 96 cases repeated over 4 times the shapes (384 cases, no raw
    samples, so the intervals are normal approximations; a bootstrap costs stats.py's time)."""
    path = copy_run(tmp_path)
    df = store.load(path).cases
    copies = []
    for i in range(4):
        c = df.copy()
        c["shape"] = c["shape"] + f"-{i}"
        c["case"] = c["case"] + f"-{i}"
        copies.append(c)
    big = pd.concat(copies, ignore_index=True)
    big.to_csv(path / store.CASES, index=False)
    store.table_file(path, store.KERNELS).unlink()
    store.table_file(path, store.RULES).unlink()
    store.seal(path)  # constructed: it vouches for its edited files
    run = store.load(path)
    assert len(run.cases) == 384
    start = time.perf_counter()
    run_kinds.write_dashboard(run, tmp_path / "big.html")
    assert time.perf_counter() - start < 15


# --- runs with less in them ----------------------------------------------------------------------


def test_timing_only_run_builds_shows_the_reason_and_no_counter_panels(tmp_path: Path) -> None:
    path = copy_run(tmp_path)
    store.table_file(path, store.KERNELS).unlink()
    store.table_file(path, store.RULES).unlink()
    manifest = json.loads((path / store.MANIFEST).read_text())
    reason = "ncu <pid 42> lacks permission to read GPU counters & ERR_NVGPUCTRPERM"
    manifest["counters"].update(status="timing_only", problem="no_permission", reason=reason)
    (path / store.MANIFEST).write_text(json.dumps(manifest))
    run = store.load(path)
    assert dashboard.counter_figures(run) == [] and launches.launches_figure(run) is None
    text = page_of([run])
    assert html.escape(reason) in text and reason not in text  # shown, and escaped
    ids = NEWPLOT.findall(text)
    assert not any("counters" in i or "launches" in i for i in ids)
    assert text.count(PLOTLYJS_MARK) == 1
    assert "DRAM throughput" not in text.split("<h2 id='findings-and-next-steps'>")[0]


@pytest.mark.parametrize("timing_kept", [False, True], ids=["as-stored", "timing-kept"])
def test_an_incorrect_case_is_marked_not_plotted_as_fast(tmp_path: Path, timing_kept: bool) -> None:
    path = copy_run(tmp_path)
    df = store.load(path).cases  # read as the current schema, written back the same way
    bad = "rmsnorm.eager.bfloat16.4096x4096"
    i = df.index[df.case == bad][0]
    df["error"] = df["error"].astype(object)
    df.loc[i, ["correct", "error"]] = [False, "max_abs_err 0.5 > atol 0.01"]
    timing = ["device_p50_ms", "device_p95_ms", "device_p5_ms", "device_iqr_ms", "gbps", "tflops"]
    if not timing_kept:  # as a capture stores an incorrect variant; a foreign table may not
        df.loc[i, [*timing, "pct_peak_bw"]] = None
    df.to_csv(path / store.CASES, index=False)
    run = store.load(path)
    latency, bandwidth = dashboard.figures(run)[:2]
    for fig in (latency, bandwidth):
        marks = [t for t in fig.data if t.legendgroup == "incorrect"]
        assert [c[0] for t in marks for c in t.customdata] == [bad]
        assert marks[0].marker.symbol == "x"
    assert plotted(latency, "eager", df, "bfloat16").count(None) == 1
    assert None in plotted(bandwidth, "eager", df, "bfloat16")
    panel = df[(df.dtype == "bfloat16")]
    mark = next(t for t in latency.data if t.legendgroup == "incorrect")
    assert mark.y[0] == panel.device_p95_ms.max()
    # no speedup, roofline point or history comparison is drawn from an incorrect case
    assert bad not in {p.baseline_case for p in speedup.speedups(run)}
    assert bad not in set(roofline.points(run)["case"])
    table = findings_view.findings_table(findings_view.finding_rows(run, explain_run(run)))
    assert "<tr class='incorrect'" in table


def test_an_interpret_run_says_so_and_stays_out_of_the_history(tmp_path: Path) -> None:
    """Constructed: a copy of the newest run as `capture --interpret` stores one (every timing
    and counter column empty, counters skipped, no ceilings)."""
    path = copy_run(tmp_path, name="rmsnorm-interpret")
    for name in (store.KERNELS, store.RULES):
        store.table_file(path, name).unlink()
    store.seal(path)  # constructed: it vouches for its edited files
    df = store.load(path).cases
    keep = {"kernel", "variant", "baseline", "dtype", "shape", "case", "correct", "rel_err",
            "max_abs_err", "error", "bytes", "flops"}  # fmt: skip
    for c in df.columns:
        if c not in keep:
            df[c] = np.nan
    df.to_csv(path / store.CASES, index=False)
    edit_manifest(
        path,
        mode="interpret",
        created="2099-01-01T00:00:00+00:00",
        ceilings={},
        counters={"status": "skipped", "reason": "--interpret: no GPU"},
    )
    run = store.load(path)
    text = page_of([run], stored())
    assert "Correctness run through Triton&#x27;s interpreter" in text
    assert NEWPLOT.findall(text) == ["run0-plot-latency", "run0-plot-bandwidth", "history0-plot"]
    h = history.history("rmsnorm", [*stored(), run])
    assert run.run_id not in [r.run_id for r in h.runs] and len(h.runs) == len(stored())
    # --kernel (store.resolve) never picks it, though it is the newest stored run of rmsnorm
    with pytest.raises(ProfkitError, match="only 1 interpret run"):
        store.resolve("rmsnorm", tmp_path)
