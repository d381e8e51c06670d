"""The statistics of consecutive timed steps (a decode loop's, say): percentiles, the tail, and
what the tail is made of (stages, buckets, batch sizes). Plain functions on arrays: profkit's
analysis half reads them without torch; profkit.measure.iteration_latency measures the steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

PERCENTILES = (5, 25, 50, 75, 95, 99)
TAIL_PCT = 95  # a step at or above the p95 is a tail step


def percentiles(ms: Sequence[float]) -> dict[str, float]:
    """p5, p25, p50, p75, p95, p99 (numpy's linear interpolation), plus n."""
    x = np.asarray(ms, dtype=float)
    if x.size == 0:
        raise ValueError("no samples")
    values = np.percentile(x, PERCENTILES)
    return {
        "n": int(x.size),
        **{f"p{p}": float(v) for p, v in zip(PERCENTILES, values, strict=True)},
    }


def tail_ratio(ms: Sequence[float]) -> float:
    """p95 / p50: 1.0 is a flat distribution; the decode lab's goal for dynamic replay is <= 1.2."""
    p = percentiles(ms)
    return p["p95"] / p["p50"]


def iteration_columns(step_ms: Sequence[float]) -> dict:
    """The case's step-latency columns (docs/tables.md). Kept apart from device_p50_ms, which is one
    call's device time with the host off the critical path: a step's latency includes the host."""
    p = percentiles(step_ms)
    return {
        "step_reps": p["n"],
        "step_p50_ms": p["p50"],
        "step_p95_ms": p["p95"],
        "step_p99_ms": p["p99"],
        "step_p5_ms": p["p5"],
        "step_iqr_ms": p["p75"] - p["p25"],
        "step_p95_over_p50": p["p95"] / p["p50"],
    }


def tail_iterations(device_ms: Sequence[float], pct: float = TAIL_PCT) -> np.ndarray:
    """Boolean mask of the steps at or above the pct-th percentile."""
    x = np.asarray(device_ms, dtype=float)
    return x >= np.percentile(x, pct)


def attribute_tail(
    device_ms: Sequence[float], stages: Mapping[str, Sequence[float]], pct: float = TAIL_PCT
) -> list[tuple[str, float]]:
    """Where the tail steps' extra time went: for each stage, its mean over the tail steps minus
    its median over all steps (ms), largest first. Stages that sum to each step's device time give
    excesses that sum to the tail's mean excess over the median step, less the stages' skew."""
    tail = tail_iterations(device_ms, pct)
    out = []
    for name, values in stages.items():
        v = np.asarray(values, dtype=float)
        if v.shape != tail.shape:
            raise ValueError(f"stage {name!r} has {v.size} samples, device time {tail.size}")
        out.append((name, float(v[tail].mean() - np.median(v))))
    return sorted(out, key=lambda kv: -kv[1])


def tail_by(
    device_ms: Sequence[float], labels: Sequence[Any], pct: float = TAIL_PCT
) -> pd.DataFrame:
    """Per label (e.g. a step's bucket): its share of all steps, its share of the tail steps, and
    its own p50 and p95/p50. A label whose tail share exceeds its step share drives the tail."""
    x = np.asarray(device_ms, dtype=float)
    lab = np.asarray(labels)
    if lab.shape != x.shape:
        raise ValueError(f"{lab.size} labels for {x.size} samples")
    tail = tail_iterations(x, pct)
    rows = []
    for value in sorted(set(lab.tolist())):
        sel = lab == value
        rows.append(
            {
                "label": value,
                "step_share": float(sel.mean()),
                "tail_share": float(tail[sel].sum() / max(tail.sum(), 1)),
                "p50_ms": float(np.median(x[sel])),
                "p95_over_p50": tail_ratio(x[sel]),
            }
        )
    return pd.DataFrame(rows)


def bucket_of(batches: Sequence[int], buckets: Sequence[int]) -> np.ndarray:
    """Each step's bucket: the smallest that holds its batch."""
    edges = np.asarray(sorted(buckets))
    n = np.asarray(batches)
    if n.size and n.max() > edges[-1]:
        raise ValueError(f"batch {n.max()} exceeds the largest bucket {edges[-1]}")
    return edges[np.searchsorted(edges, n)]


def inherent_mix(device_ms: Sequence[float], labels: Sequence[Any]) -> float:
    """p95/p50 the steps would have if each took its label's median (e.g. its bucket's): the
    variation of the work itself, with the jitter within a label taken out."""
    x, lab = np.asarray(device_ms, dtype=float), np.asarray(labels)
    if lab.shape != x.shape:
        raise ValueError(f"{lab.size} labels for {x.size} samples")
    medians = {v: np.median(x[lab == v]) for v in set(lab.tolist())}
    return tail_ratio([medians[v] for v in lab.tolist()])


def tail_split(
    device_ms: Sequence[float],
    stages: Mapping[str, Sequence[float]],
    labels: Sequence[Any],
    pct: float = TAIL_PCT,
) -> list[dict]:
    """The tail steps' stages against their own label's stage medians (each stage's mean, over the
    tail steps, of the step's stage minus its label's median for that stage): what made them slow
    beyond the size of their work. First the run's whole tail ("all"), then each label holding
    tail steps, most tail steps first; excess_ms per stage, largest first."""
    x, lab = np.asarray(device_ms, dtype=float), np.asarray(labels)
    if lab.shape != x.shape:
        raise ValueError(f"{lab.size} labels for {x.size} samples")
    tail = tail_iterations(x, pct)
    rel = {}
    for name, values in stages.items():
        v = np.asarray(values, dtype=float)
        if v.shape != x.shape:
            raise ValueError(f"stage {name!r} has {v.size} samples, device time {x.size}")
        med = {b: np.median(v[lab == b]) for b in set(lab.tolist())}
        rel[name] = v - np.array([med[b] for b in lab.tolist()])

    def row(label: Any, sel: np.ndarray) -> dict:
        excess = {k: float(r[sel].mean()) for k, r in rel.items()}
        ranked = dict(sorted(excess.items(), key=lambda kv: -kv[1]))
        return {"bucket": label, "tail_steps": int(sel.sum()), "excess_ms": ranked}

    counts = {b: int((tail & (lab == b)).sum()) for b in set(lab[tail].tolist())}
    order = sorted(counts, key=lambda b: (-counts[b], b))
    return [row("all", tail), *(row(_plain(b), tail & (lab == b)) for b in order)]


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def dynamic_tail(
    samples: pd.DataFrame, case: str, batches: Sequence[int], buckets: Sequence[int]
) -> dict:
    """From a dynamic case's stored samples (step order) and each timed step's batch: the inherent
    mix (over the `device` kind) and the within-bucket split of the probed run's tail (over
    `probe.device` and its `probe.<stage>` kinds; absent without probes). Empty when the sample
    counts disagree with the batches."""
    mine = samples[samples["case"].astype(str) == case]
    kinds = {k: g["ms"].to_numpy(float) for k, g in mine.groupby("kind", sort=False)}
    labels = bucket_of(batches, buckets)
    out: dict = {}
    if kinds.get("device") is not None and kinds["device"].size == labels.size:
        out["inherent_mix_p95_over_p50"] = inherent_mix(kinds["device"], labels)
    probe = kinds.get("probe.device")
    if probe is not None and probe.size == labels.size:
        stages = {
            k.removeprefix("probe."): v
            for k, v in kinds.items()
            if k.startswith("probe.") and k not in ("probe.device", "probe.host")
        }
        if stages and all(v.size == labels.size for v in stages.values()):
            out["tail_split"] = tail_split(probe, stages, labels)
    return out
