"""Step latency: runs that time a whole step (decode, issue 11) rather than one call's device time.

Such runs carry step_p99_ms, step_p95_over_p50 and the probes' tail_stage in cases.csv; they are
recognised by those columns, not by the kernel's name. Per variant, one finding: the distribution
at the case with the widest tail (p50, p95, p99, p95/p50), the range of p95/p50 across its cases,
and where the tail comes from (the probes' stage with the largest p95 excess; for dynamic replay,
padding waste and the batch bucket holding the tail, from the manifest's dynamic section).
The manifest's note (a measured upper bound, not a serving claim) goes to the kernel's section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pandas as pd

from profkit.explain.evidence import Evidence, num, text
from profkit.explain.model import Cause, Finding, FindingKind, Reason
from profkit.stats.tail import dynamic_tail
from profkit.store import DECODE, Run


def as_timed(rows: list[dict]) -> list[dict]:
    """Rows for the verdicts' comparison with the baseline, which reads device_p50_ms, _iqr_ms and
    _reps: here the step's (the verdict is then marked as weighing step latency)."""
    keys = ("p50_ms", "p95_ms", "p5_ms", "iqr_ms", "reps")
    return [r | {f"device_{k}": r.get(f"step_{k}") for k in keys} for r in rows]


def as_timed_frame(run: Run) -> pd.DataFrame:
    """A run's cases with its kind's latency under the device_* names: a decode run's iteration
    latency (as_timed), every other kind's cases as they are. For the comparisons that read
    device_p50_ms (speedups, history), which a decode run leaves empty."""
    if run.kind != DECODE:
        return run.cases
    return pd.DataFrame(as_timed(run.cases.to_dict("records")), index=run.cases.index)


def iteration_findings(
    kernel: str, rows: list[dict], manifest: Mapping, samples: pd.DataFrame | None = None
) -> list[Finding]:
    """One finding per variant, in the table's order; rows without a p99 are left out. samples:
    the run's, for dynamic runs stored before the manifest held the tail's split."""
    timed = [r for r in rows if num(r, "step_p99_ms") is not None]
    out = []
    for variant in dict.fromkeys(str(r["variant"]) for r in timed):
        mine = [r for r in timed if str(r["variant"]) == variant]
        out.append(_variant_finding(kernel, variant, mine, manifest, samples))
    return out


def _ratio(row: Mapping) -> float:
    r = num(row, "step_p95_over_p50")
    if r is not None:
        return r
    return (num(row, "step_p95_ms") or 0.0) / (num(row, "step_p50_ms") or float("inf"))


def _variant_finding(
    kernel: str, variant: str, rows: list[dict], manifest: Mapping, samples: pd.DataFrame | None
) -> Finding:
    worst = max(rows, key=_ratio)
    ev = Evidence()
    method = (manifest.get("timing") or {}).get("method")
    ev.put("timing_method", str(method) if method else None)
    ev.put("step_cases", len(rows))
    ev.put("worst_case", text(worst, "case"))
    ev.put("worst_where", f"{worst['dtype']} {worst['shape']}")
    for col in ("step_p50_ms", "step_p95_ms", "step_p99_ms"):
        ev.put(col, num(worst, col))
    ev.put("p95_over_p50_ratio", _ratio(worst))
    ratios = [_ratio(r) for r in rows]
    ev.put("p95_over_p50_min_ratio", min(ratios))
    ev.put("p95_over_p50_max_ratio", max(ratios))
    host = num(worst, "host_us")
    ev.put("host_us", host)
    reasons = [
        Reason(
            Cause.ITERATION_LATENCY,
            ["step_p50_ms", "step_p95_ms", "step_p99_ms", "p95_over_p50_ratio"],
            {"cases": [_case_detail(r) for r in rows]},
        )
    ]
    probed = [r for r in rows if text(r, "tail_stage")]
    if probed:
        top = max(probed, key=_ratio)
        ev.put("tail_where", f"{top['dtype']} {top['shape']}")
        ev.put("tail_stage", text(top, "tail_stage"))
        excess = num(top, "tail_stage_excess_ms")
        ev.put("tail_stage_excess_us", excess * 1000 if excess is not None else None)
        total = num(top, "tail_excess_ms")
        ev.put("tail_excess_us", total * 1000 if total is not None else None)
        ev.put("probe_note", text(top, "probe_note"))
        counts = Counter(text(r, "tail_stage") for r in probed)
        stage, n = counts.most_common(1)[0]
        ev.put("commonest_tail_stage", stage)
        ev.put("commonest_tail_cases", n)
        ev.put("probed_cases", len(probed))
        reasons.append(
            Reason(
                Cause.TAIL_STAGE,
                ["tail_where", "tail_stage", "tail_stage_excess_us", "commonest_tail_stage"],
            )
        )
    padded = [r for r in rows if num(r, "pad_waste_mean") is not None]
    if padded:
        reasons.append(_padding(padded[0], manifest, ev, samples))
    return Finding(
        subject=f"{kernel} {variant}",
        kind=FindingKind.ITERATIONS,
        kernel=kernel,
        variant=variant,
        case=text(worst, "case"),
        dtype=str(worst["dtype"]),
        shape=str(worst["shape"]),
        reasons=reasons,
        evidence=dict(ev),
    )


def _padding(row: Mapping, manifest: Mapping, ev: Evidence, samples: pd.DataFrame | None) -> Reason:
    """Dynamic replay: the padding waste, the ratio within a bucket, the inherent mix, the bucket
    with the tail and what its tail steps spent beyond their bucket's stage medians."""
    waste = num(row, "pad_waste_mean")
    ev.put("pad_waste_pct", waste * 100 if waste is not None else None)
    ev.put("within_bucket_p95_over_p50_ratio", num(row, "within_bucket_p95_over_p50"))
    ev.put("buckets", text(row, "buckets"))
    ev.put("copy_in", text(row, "copy_in"))
    keys = ["pad_waste_pct", "within_bucket_p95_over_p50_ratio"]
    # the row's own section (dynamic_fused, since session 5), else "dynamic" (older runs)
    dyn = manifest.get(text(row, "variant") or "") or manifest.get("dynamic") or {}
    derived = _dynamic_tail(row, dyn, samples)
    ev.put("inherent_mix_p95_over_p50_ratio", derived.get("inherent_mix_p95_over_p50"))
    split = derived.get("tail_split") or []
    if len(split) > 1:  # "all", then the bucket holding the most tail steps
        top = split[1]
        ev.put("split_bucket", str(top["bucket"]))
        ev.put("split_tail_steps", top["tail_steps"])
        ev.put("split_all_tail_steps", split[0]["tail_steps"])
        for i, (stage, ms) in enumerate(list(top["excess_ms"].items())[:2], 1):
            ev.put(f"split_stage{i}", stage)
            ev.put(f"split_stage{i}_us", ms * 1000)
        keys += ["split_bucket", "split_stage1", "split_stage1_us"]
    by_bucket = dyn.get("tail_by_bucket") or []
    if by_bucket:
        top = max(by_bucket, key=lambda b: b.get("tail_share") or 0.0)
        ev.put("tail_bucket", str(top.get("label")))
        ev.put("tail_bucket_tail_pct", (top.get("tail_share") or 0.0) * 100)
        ev.put("tail_bucket_steps_pct", (top.get("step_share") or 0.0) * 100)
        ev.put("tail_bucket_p50_ms", top.get("p50_ms"))
        keys += ["tail_bucket", "tail_bucket_tail_pct", "tail_bucket_steps_pct"]
        # the tail bucket's own median against the whole run's: above 1, its steps sit in the
        # run's tail by their size alone (the mix of buckets), before any jitter
        run_p50, bucket_p50 = num(row, "step_p50_ms"), top.get("p50_ms")
        if run_p50 and bucket_p50 is not None:
            ev.put("tail_bucket_p50_over_run_ratio", bucket_p50 / run_p50)
        within = [b["p95_over_p50"] for b in by_bucket if b.get("p95_over_p50") is not None]
        if within:
            ev.put("bucket_p95_over_p50_min_ratio", min(within))
            ev.put("bucket_p95_over_p50_max_ratio", max(within))
    detail = {"buckets": [_bucket_detail(b) for b in by_bucket]} if by_bucket else {}
    if split:
        detail["tail_split"] = split
    return Reason(Cause.PADDING, keys, detail)


def _dynamic_tail(row: Mapping, dyn: Mapping, samples: pd.DataFrame | None) -> dict:
    """The inherent mix and the within-bucket split as the run stored them (cases.csv, manifest);
    for runs stored before them, computed from the run's samples and the manifest's batches."""
    stored = {
        "inherent_mix_p95_over_p50": num(row, "inherent_mix_p95_over_p50")
        or dyn.get("inherent_mix_p95_over_p50"),
        "tail_split": dyn.get("tail_split"),
    }
    if all(v is not None for v in stored.values()):
        return stored
    batches, buckets = dyn.get("batches"), dyn.get("buckets")
    if samples is None or not batches or not buckets or max(batches) > max(buckets):
        return {k: v for k, v in stored.items() if v is not None}
    computed = dynamic_tail(samples, text(row, "case") or "", batches, buckets)
    return {k: v if v is not None else computed.get(k) for k, v in stored.items()}


def _case_detail(row: Mapping) -> dict:
    return {
        "case": text(row, "case"),
        "shape": str(row["shape"]),
        "p50_ms": num(row, "step_p50_ms"),
        "p95_ms": num(row, "step_p95_ms"),
        "p99_ms": num(row, "step_p99_ms"),
        "p95_over_p50": _ratio(row),
        "tail_stage": text(row, "tail_stage"),
        "tail_stage_excess_ms": num(row, "tail_stage_excess_ms"),
    }


def _bucket_detail(b: Mapping) -> dict:
    return {k: b.get(k) for k in ("label", "step_share", "tail_share", "p50_ms", "p95_over_p50")}


def kernel_note(manifest: Mapping) -> str | None:
    """The manifest's own caveat (decode: a measured upper bound, not a serving claim)."""
    note = manifest.get("note")
    return str(note) if note else None
