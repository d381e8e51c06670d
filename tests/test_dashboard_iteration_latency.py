"""The dashboard's step-latency views on the stored H200 decode run (issue 11).

Expected values are computed here from the stored samples.csv.gz and cases.csv (numpy, pandas),
never from the dashboard's own code; a run without the step columns gets no such section.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from stored_runs import run_path

from profkit import dashboard, store
from profkit.dashboard import iteration_latency
from profkit.explain import explain_run

ROOT = Path(__file__).parents[1]
DECODE = run_path("decode-20261130-164018-vm-d2d4")
RMSNORM = run_path("rmsnorm-20261130-014917-vm-4bc5")
NEWPLOT = re.compile(r'Plotly\.newPlot\("([^"]+)"')


@cache
def run() -> store.Run:
    return store.load(DECODE)


@cache
def samples() -> pd.DataFrame:
    return pd.read_csv(DECODE / "samples.csv.gz")


@cache
def cases() -> pd.DataFrame:
    return pd.read_csv(DECODE / "cases.csv")


def page(r: store.Run) -> str:
    return dashboard.build_dashboard([r], {r.run_id: explain_run(r)}, (), "shared")


def test_distribution_boxes_are_the_stored_samples_percentiles():
    fig = iteration_latency.distribution_figure(run())
    s = samples()
    boxes = [t for t in fig.data if t.type == "box"]
    assert [b.legendgroup for b in boxes] == list(dict.fromkeys(cases()["variant"]))
    n = 0
    for b in boxes:
        for i, shape in enumerate(b.x):
            case = f"decode.{b.legendgroup}.bfloat16.{shape}"
            x = s.loc[(s["case"] == case) & (s["kind"] == "device"), "ms"].to_numpy()
            assert x.size == 1000
            p5, p25, p50, p75, p99 = np.percentile(x, [5, 25, 50, 75, 99])
            assert b.median[i] == pytest.approx(p50)
            assert (b.q1[i], b.q3[i]) == pytest.approx((p25, p75))
            assert (b.lowerfence[i], b.upperfence[i]) == pytest.approx((p5, p99))
            # and the stored p50 column was taken over the same samples (which the CSV keeps
            # to 10 ns: the stored column, from the unrounded ones, agrees to that)
            stored = cases().set_index("case").loc[case, "device_p50_ms"]
            assert b.median[i] == pytest.approx(stored, abs=1e-5)
            n += 1
    assert n == len(cases())
    p95 = [t for t in fig.data if t.type == "scatter"]
    for t in p95:
        for shape, y in zip(t.x, t.y, strict=True):
            case = f"decode.{t.legendgroup}.bfloat16.{shape}"
            x = s.loc[(s["case"] == case) & (s["kind"] == "device"), "ms"].to_numpy()
            assert y == pytest.approx(np.percentile(x, 95))


def test_tail_bars_match_the_stored_tail_stage():
    fig = iteration_latency.tail_figure(run())
    bars = {(t.name, x): y for t in fig.data for x, y in zip(t.x, t.y, strict=True)}
    probed = cases()[cases()["tail_stage"].notna()]
    assert len({x for _, x in bars}) == len(probed)
    for row in probed.itertuples():
        label = f"{row.variant} {row.shape}"
        mine = {stage: y for (stage, x), y in bars.items() if x == label}
        # the tallest bar is the stored tail stage, at the stored excess (to 10 ns: rounding)
        assert max(mine, key=mine.get) == row.tail_stage
        assert mine[row.tail_stage] == pytest.approx(row.tail_stage_excess_ms * 1e3, abs=0.01)


def test_tail_bar_recomputed_from_the_probe_samples():
    # one case by hand: each stage's mean over the steps at or above the p95, minus its median
    case, s = "decode.dynamic.bfloat16.32x2048", samples()
    mine = s[s["case"] == case]
    device = mine.loc[mine["kind"] == "probe.device", "ms"].to_numpy()
    tail = device >= np.percentile(device, 95)
    fig = iteration_latency.tail_figure(run())
    for t in fig.data:
        x = mine.loc[mine["kind"] == f"probe.{t.name}", "ms"].to_numpy()
        if x.size == 0:
            assert "dynamic 32x2048" not in list(t.x)
            continue
        y = dict(zip(t.x, t.y, strict=True))["dynamic 32x2048"]
        assert y == pytest.approx((x[tail].mean() - np.median(x)) * 1e3)


def test_page_has_the_step_sections_deterministically():
    a, b = page(run()), page(run())
    assert a == b
    assert "Step latency distribution" in a and "Where the tail comes from" in a
    assert "run0-plot-steps" in NEWPLOT.findall(a) and "run0-plot-steptail" in NEWPLOT.findall(a)
    assert "not one call&#x27;s device time" in a or "not one call's device time" in a
    assert run().manifest["note"] in a
    assert "run0-plot-stepbuckets" in NEWPLOT.findall(a)
    # speedups over step latency, said so; no view that reads one call's device time
    assert "Speedup = baseline step p50 / lab step p50" in a
    assert "run0-plot-speedup" in NEWPLOT.findall(a)
    for title in ("Roofline", "Device time against host cost", "Device time per shape"):
        assert f">{title}</h2>" not in a, title


def test_no_step_views_for_other_runs():
    r = store.load(RMSNORM)
    assert (
        iteration_latency.distribution_figure(r) is None
        and iteration_latency.tail_figure(r) is None
    )
    html = page(r)
    assert "Step latency distribution" not in html and "plot-steps" not in html


def test_bucket_view_agrees_with_the_bench_and_counts_padding():
    b = iteration_latency.by_bucket(run()).set_index("label")
    stored = run().manifest["dynamic"]
    for r in stored["tail_by_bucket"]:  # what the bench computed on the GPU from the same steps
        assert b.loc[r["label"], "p50_ms"] == pytest.approx(r["p50_ms"], abs=1e-5)
        assert b.loc[r["label"], "tail_share"] == pytest.approx(r["tail_share"])
    batches = np.array(stored["batches"])
    assert b.loc[8, "pad_waste"] == 0.0  # batch 8 fills bucket 8; the walk never goes below 8
    in16 = batches[(batches > 8) & (batches <= 16)]
    assert b.loc[16, "pad_waste"] == pytest.approx(((16 - in16) / 16).mean())
    assert iteration_latency.bucket_figure(store.load(RMSNORM)) is None


FUSED = run_path("decode-20261201-002601-vm-da36a7")  # dynamic and dynamic_fused


def test_bucket_view_draws_every_dynamic_variant():
    r = store.load(FUSED)
    assert iteration_latency.dynamic_variants(r) == ["dynamic", "dynamic_fused"]
    fig = iteration_latency.bucket_figure(r)
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    assert set(bars) == {"dynamic: step latency p50 (us)", "dynamic_fused: step latency p50 (us)"}
    for variant in ("dynamic", "dynamic_fused"):
        stored = {b["label"]: b for b in r.manifest[variant]["tail_by_bucket"]}
        drawn = dict(
            zip(
                bars[f"{variant}: step latency p50 (us)"].x,
                bars[f"{variant}: step latency p50 (us)"].y,
                strict=True,
            )
        )
        for label, b in stored.items():  # each variant's own steps, as the bench computed them
            assert drawn[str(label)] == pytest.approx(b["p50_ms"] * 1e3, abs=1e-2)
    # the two replayed the same batches: step share and padding drawn once, tail share per variant
    names = [t.name for t in fig.data if t.type == "scatter"]
    assert names.count("share of steps (%)") == 1 and names.count("padding waste (%)") == 1
    assert sum("share of steps >= p" in n for n in names) == 2
