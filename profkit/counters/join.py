"""Fold per-launch counters into one row per case, and join them to the timing table (cases.csv).

Each metric folds by its `agg` in profkit.counters.metrics: sum, duration-weighted mean, or max. The
derived columns are recomputed from the folded ones (dram_bytes = read + write, shared_mem_bytes =
static + dynamic), so a case row obeys the same identities as a launch row.
"""

from __future__ import annotations

import pandas as pd

from profkit.counters.metrics import COUNTER_COLUMNS, METRICS

CASE_KEYS = ("kernel", "variant", "dtype", "shape", "case")
WEIGHT = "ncu_duration_ms"


def aggregate_cases(kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per profkit case: CASE_KEYS then COUNTER_COLUMNS. Launches with no case (a report
    from elsewhere, or kernels outside profkit's ranges) are left out."""
    has_case = kernels["case"].notna() & (kernels["case"].astype(str) != "")
    rows = kernels[has_case].reset_index(drop=True)
    metrics = rows.reindex(columns=[m.column for m in METRICS]).apply(
        pd.to_numeric, errors="coerce"
    )
    groups = rows["case"]
    out = rows.groupby(groups, sort=False)[list(CASE_KEYS[:-1])].first()
    for m in METRICS:
        values = metrics[m.column]
        if m.agg == "sum":
            out[m.column] = values.groupby(groups, sort=False).sum(min_count=1)
        elif m.agg == "wmean":
            out[m.column] = _weighted_mean(values, metrics[WEIGHT], groups)
        else:
            out[m.column] = values.groupby(groups, sort=False).max()
    out["dram_bytes"] = out["dram_bytes_read"] + out["dram_bytes_write"]
    out["shared_mem_bytes"] = out["shared_mem_static_bytes"] + out["shared_mem_dynamic_bytes"]
    out["kernel_count"] = groups.groupby(groups, sort=False).size()
    return out.rename_axis("case").reset_index()[[*CASE_KEYS, *COUNTER_COLUMNS]]


def _weighted_mean(values: pd.Series, weights: pd.Series, groups: pd.Series) -> pd.Series:
    """Duration-weighted mean over the launches that have both the value and a duration; the plain
    mean where none has a duration, NaN where none has the value."""
    usable = values.notna() & weights.notna()
    num = (values * weights).where(usable).groupby(groups, sort=False).sum(min_count=1)
    den = weights.where(usable).groupby(groups, sort=False).sum(min_count=1)
    plain = values.groupby(groups, sort=False).mean()
    return (num / den.where(den > 0)).fillna(plain)


def join(cases_timing: pd.DataFrame, counters: pd.DataFrame | None) -> pd.DataFrame:
    """The timing table (one row per case) with each case's counters to its right.

    `counters` is aggregate_cases' output, or None when the run is timing only. Every counter
    column exists in the result, NaN for a case without counters; timing rows keep their order.
    """
    if counters is None:
        counters = pd.DataFrame(columns=["case", *COUNTER_COLUMNS])
    timing = cases_timing.drop(columns=[c for c in COUNTER_COLUMNS if c in cases_timing])
    counters = counters.reindex(columns=["case", *COUNTER_COLUMNS])
    counters = counters.astype({c: float for c in COUNTER_COLUMNS})
    return timing.merge(counters, on="case", how="left", validate="many_to_one")
