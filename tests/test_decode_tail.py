"""The inherent mix and the within-bucket split of the dynamic tail
(profkit.measure.tail.dynamic_tail), and explain quoting them, on the stored H200 run
decode-20261130-184819-vm-acb534 (its manifest predates both, so explain computes them from the
run's samples). Expected figures are computed here with pandas from samples.csv.gz and
manifest.json, not with profkit's code."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pandas as pd
import pytest
from stored_runs import explained, run_path

from profkit import store
from profkit.explain import Cause, FindingKind, explain_run
from profkit.explain.phrases import finding_text
from profkit.stats import tail

RUN_ID = "decode-20261130-184819-vm-acb534"
RUN = run_path(RUN_ID)
CASE = "decode.dynamic.bfloat16.32x2048"


@cache
def frame() -> pd.DataFrame:
    """One row per timed step: its bucket, device ms, probed device ms and stages."""
    m = json.loads((RUN / "manifest.json").read_text())["dynamic"]
    s = pd.read_csv(RUN / "samples.csv.gz")
    s = s[s["case"] == CASE].copy()
    s["step"] = s.groupby("kind").cumcount()
    wide = s.pivot(index="step", columns="kind", values="ms")
    wide["bucket"] = [min(b for b in m["buckets"] if b >= n) for n in m["batches"]]
    return wide


def expected_split(bucket: int) -> pd.Series:
    w = frame()
    stages = [c for c in w.columns if c.startswith("probe.") and c != "probe.device"]
    tail = w["probe.device"] >= w["probe.device"].quantile(0.95)
    medians = w.groupby("bucket")[stages].transform("median")
    excess = (w[stages] - medians)[tail & (w["bucket"] == bucket)].mean()
    return excess.rename(lambda k: k.removeprefix("probe.")).sort_values(ascending=False)


def test_inherent_mix_is_every_step_at_its_bucket_median():
    w = frame()
    at_median = w.groupby("bucket")["device"].transform("median")
    want = at_median.quantile(0.95) / at_median.median()
    got = tail.dynamic_tail(pd.read_csv(RUN / "samples.csv.gz"), CASE, *_walk())
    assert got["inherent_mix_p95_over_p50"] == pytest.approx(want)
    # the bucket mix alone stays under the run's own p95/p50 (jitter adds the rest)
    ratio = w["device"].quantile(0.95) / w["device"].median()
    assert 1 < got["inherent_mix_p95_over_p50"] < ratio


def _walk():
    m = json.loads((RUN / "manifest.json").read_text())["dynamic"]
    return m["batches"], m["buckets"]


def test_split_of_bucket_32_tail_against_its_own_stage_medians():
    got = tail.dynamic_tail(pd.read_csv(RUN / "samples.csv.gz"), CASE, *_walk())["tail_split"]
    assert got[0]["bucket"] == "all" and got[0]["tail_steps"] == 50
    top = got[1]
    assert top["bucket"] == 32 and top["tail_steps"] == 49
    want = expected_split(32)
    assert list(top["excess_ms"]) == list(want.index)
    assert np.allclose(list(top["excess_ms"].values()), want.to_numpy())
    assert list(top["excess_ms"])[:2] == ["copy_in", "launch"]


def test_explain_quotes_the_split_and_the_inherent_mix():
    report = explained(RUN_ID)
    f = next(f for f in report if f.kind == FindingKind.ITERATIONS and f.variant == "dynamic")
    ev = f.evidence
    want = expected_split(32)
    assert ev["split_bucket"] == "32" and ev["split_tail_steps"] == 49
    assert ev["split_stage1"] == "copy_in"
    assert ev["split_stage1_us"] == pytest.approx(want["copy_in"] * 1000)
    assert ev["split_stage2_us"] == pytest.approx(want["launch"] * 1000)
    assert f"exceed the bucket's own stage medians by copy_in {want['copy_in'] * 1e3:.1f} us" in (
        " ".join(finding_text(f).split())
    )
    at_median = frame().groupby("bucket")["device"].transform("median")
    mix = at_median.quantile(0.95) / at_median.median()
    assert ev["inherent_mix_p95_over_p50_ratio"] == pytest.approx(mix)
    assert f"inherent mix {mix:.2f}" in finding_text(f)
    padding = next(r for r in f.reasons if r.cause == Cause.PADDING)
    assert [s["bucket"] for s in padding.detail["tail_split"]][:2] == ["all", 32]


def test_stored_split_is_read_before_the_samples():
    run = store.load(RUN)
    stored = {"bucket": 8, "tail_steps": 3, "excess_ms": {"launch": 0.004, "copy_in": 0.001}}
    run.manifest["dynamic"]["tail_split"] = [stored | {"bucket": "all"}, stored]
    run.manifest["dynamic"]["inherent_mix_p95_over_p50"] = 1.111
    f = next(
        f for f in explain_run(run) if f.kind == FindingKind.ITERATIONS and f.variant == "dynamic"
    )
    assert f.evidence["split_bucket"] == "8" and f.evidence["split_stage1"] == "launch"
    assert f.evidence["inherent_mix_p95_over_p50_ratio"] == pytest.approx(1.111)
