"""profkit.counters.join: per-case folding of launch counters, and the join onto the timing
table."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from profkit.counters.join import CASE_KEYS, aggregate_cases, join
from profkit.counters.metrics import COUNTER_COLUMNS, METRICS

TRITON = "rmsnorm.triton.float16.4096x8192"
EAGER = "rmsnorm.eager.float16.4096x4096"


def timing_table(cases: list[str]) -> pd.DataFrame:
    parts = [c.split(".") for c in cases]
    return pd.DataFrame(
        {
            "kernel": [p[0] for p in parts],
            "variant": [p[1] for p in parts],
            "dtype": [p[2] for p in parts],
            "shape": [p[3] for p in parts],
            "case": cases,
            "correct": [True] * len(cases),
            "device_p50_ms": np.arange(1.0, len(cases) + 1),
        }
    )


def launches(case: str, **columns: list) -> pd.DataFrame:
    """Synthetic launch rows of one case; metric columns not given are NaN."""
    n = len(next(iter(columns.values())))
    frame = pd.DataFrame(
        {"case": [case] * n, "kernel": "k", "variant": "v", "dtype": "float16", "shape": "8x8"}
    )
    for m in METRICS:
        frame[m.column] = columns.get(m.column, [math.nan] * n)
    return frame


@pytest.fixture(scope="module")
def rmsnorm(ncu_tables) -> tuple[pd.DataFrame, pd.DataFrame]:
    kernels = ncu_tables("fx_rmsnorm").kernels
    return kernels, aggregate_cases(kernels).set_index("case")


# --- aggregate_cases -----------------------------------------------------------------------


def test_one_row_per_case_in_report_order(rmsnorm) -> None:
    kernels, agg = rmsnorm
    assert list(agg.index) == [TRITON, EAGER]
    assert list(aggregate_cases(kernels).columns) == [*CASE_KEYS, *COUNTER_COLUMNS]
    assert agg.loc[EAGER, ["kernel", "variant", "dtype", "shape"]].tolist() == [
        "rmsnorm",
        "eager",
        "float16",
        "4096x4096",
    ]


def test_single_launch_case_keeps_its_values(rmsnorm) -> None:
    kernels, agg = rmsnorm
    launch = kernels[kernels["case"] == TRITON].iloc[0]
    assert agg.loc[TRITON, "kernel_count"] == 1
    for column in COUNTER_COLUMNS:
        assert agg.loc[TRITON, column] == pytest.approx(launch[column], rel=1e-12, nan_ok=True), (
            column
        )


def test_eager_case_folds_eight_launches(rmsnorm) -> None:
    kernels, agg = rmsnorm
    eager = kernels[kernels["case"] == EAGER]
    row = agg.loc[EAGER]
    assert row["kernel_count"] == 8
    assert row["ncu_duration_ms"] == pytest.approx(eager["ncu_duration_ms"].sum(), rel=1e-12)
    assert row["ncu_duration_ms"] == pytest.approx(0.21888, rel=1e-9)  # 218880 ns, by hand
    weights = eager["ncu_duration_ms"].to_numpy()
    expected = float(np.dot(eager["dram_throughput_pct"].to_numpy(), weights) / weights.sum())
    assert row["dram_throughput_pct"] == pytest.approx(expected, rel=1e-12)
    assert row["dram_throughput_pct"] != pytest.approx(eager["dram_throughput_pct"].mean())
    assert row["grid_size"] == eager["grid_size"].max() == 65536
    assert row["dram_bytes"] == eager["dram_bytes_read"].sum() + eager["dram_bytes_write"].sum()
    assert (
        row["shared_mem_bytes"] == row["shared_mem_static_bytes"] + row["shared_mem_dynamic_bytes"]
    )


def test_wmean_weights_only_launches_with_the_value() -> None:
    frame = pd.concat(
        [
            launches("a", ncu_duration_ms=[1.0, 3.0, math.nan], l2_hit_pct=[10.0, math.nan, 50.0]),
            launches("b", ncu_duration_ms=[1.0, 2.0]),
            launches("c", l2_hit_pct=[20.0, 40.0]),
            launches("d", ncu_duration_ms=[1.0, 3.0], l2_hit_pct=[10.0, 50.0]),
        ]
    )
    agg = aggregate_cases(frame).set_index("case")
    assert agg.loc["a", "l2_hit_pct"] == 10.0  # the 3 ms launch has no value, the 50% one no weight
    assert math.isnan(agg.loc["b", "l2_hit_pct"])  # no launch has the value
    assert agg.loc["c", "l2_hit_pct"] == 30.0  # no durations at all: the plain mean
    assert agg.loc["d", "l2_hit_pct"] == 40.0  # (10 * 1 + 50 * 3) / 4
    assert math.isnan(agg.loc["c", "ncu_duration_ms"])  # an all-NaN sum stays NaN
    assert math.isnan(agg.loc["b", "grid_size"])  # and so does an all-NaN max
    assert agg.loc["a", "ncu_duration_ms"] == 4.0


def test_launches_without_a_case_are_left_out(ncu_tables) -> None:
    plain = aggregate_cases(ncu_tables("fx_plain").kernels)
    assert plain.empty and list(plain.columns) == [*CASE_KEYS, *COUNTER_COLUMNS]
    mixed = pd.concat(
        [
            launches("a", ncu_duration_ms=[1.0]),
            launches("", ncu_duration_ms=[2.0]),
            launches(math.nan, ncu_duration_ms=[3.0]),
        ]
    )
    assert aggregate_cases(mixed)["case"].tolist() == ["a"]


def test_same_result_from_kernels_csv(rmsnorm) -> None:
    kernels, agg = rmsnorm
    text = io.StringIO(kernels.to_csv(index=False))
    again = aggregate_cases(pd.read_csv(text)).set_index("case")
    pd.testing.assert_frame_equal(again, agg, check_dtype=False)


# --- join ----------------------------------------------------------------------------------


def test_join_with_counters(rmsnorm) -> None:
    _, agg = rmsnorm
    compiled = "rmsnorm.compile.float16.4096x4096"
    timing = timing_table([EAGER, compiled, TRITON])
    joined = join(timing, agg.reset_index())
    assert list(joined.columns) == [*timing.columns, *COUNTER_COLUMNS]
    assert joined["case"].tolist() == [EAGER, compiled, TRITON]  # timing order kept
    assert joined["device_p50_ms"].tolist() == [1.0, 2.0, 3.0]
    assert joined.loc[0, "kernel_count"] == 8
    assert joined.loc[2, "ncu_duration_ms"] == pytest.approx(agg.loc[TRITON, "ncu_duration_ms"])
    assert joined.loc[1, list(COUNTER_COLUMNS)].isna().all()  # a case with no counters


def test_join_without_counters() -> None:
    timing = timing_table([TRITON, EAGER])
    joined = join(timing, None)
    assert list(joined.columns) == [*timing.columns, *COUNTER_COLUMNS]
    assert joined[list(COUNTER_COLUMNS)].isna().all().all()
    assert all(joined[c].dtype == float for c in COUNTER_COLUMNS)
    pd.testing.assert_frame_equal(joined[list(timing.columns)], timing)


def test_join_replaces_counter_columns_already_in_timing(rmsnorm) -> None:
    _, agg = rmsnorm
    timing = timing_table([TRITON]).assign(ncu_duration_ms=99.0)
    joined = join(timing, agg.reset_index())
    assert list(joined.columns) == [*timing_table([TRITON]).columns, *COUNTER_COLUMNS]
    assert joined.loc[0, "ncu_duration_ms"] == pytest.approx(0.032416)


def test_join_refuses_per_launch_counters(ncu_tables) -> None:
    with pytest.raises(pd.errors.MergeError):
        join(timing_table([EAGER]), ncu_tables("fx_rmsnorm").kernels)
