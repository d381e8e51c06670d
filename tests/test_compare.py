"""profkit.compare on two small constructed runs (CPU only, nothing stored)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from case_columns import CASE_COLUMNS, NAN
from rich.console import Console

from profkit import compare, store
from profkit.errors import ProfkitError


def case(
    variant: str, shape: str, device_p50_ms: float, device_iqr_ms: float = 0.005, **columns
) -> dict:
    """One cases.csv row with every documented column; an incorrect one has empty timing."""
    row = dict.fromkeys(CASE_COLUMNS, NAN)
    row.update(
        kernel="rmsnorm", variant=variant, baseline=variant == "eager", dtype="float16",
        shape=shape, case=f"rmsnorm.{variant}.float16.{shape}", correct=True, error="",
        device_p50_ms=device_p50_ms, device_iqr_ms=device_iqr_ms, device_reps=100,
    )  # fmt: skip
    row.update(columns)
    if row["correct"] is False:
        row.update(device_p50_ms=NAN, device_iqr_ms=NAN, error="mismatch")
    return row


def run_of(
    run_id: str, rows: list[dict], gpu: str = "NVIDIA H200", torch: str = "2.11.0"
) -> store.Run:
    manifest = {"run_id": run_id, "fingerprint": {"gpu": gpu, "torch": torch},
                "counters": {"status": "ok"}}  # fmt: skip
    return store.Run(Path(run_id), manifest, pd.DataFrame(rows))


A = run_of(
    "run-a",
    [
        case("triton", "4096x8192", 0.10, dram_throughput_pct=72.0, kernel_count=1.0,
             dram_bytes=2.7e8, achieved_occupancy_pct=60.0),
        case("triton", "1024x1024", 0.010, device_iqr_ms=0.001),
        case("triton", "2048x2048", 0.5, device_iqr_ms=0.25),
        case("eager", "4096x8192", 0.20, kernel_count=9.0),
        case("old", "4096x8192", 0.30),
        case("eager", "1024x1024", 0.02, correct=False),
    ],
)  # fmt: skip
B = run_of(
    "run-b",
    [
        case("new", "4096x8192", 0.05),
        case("triton", "4096x8192", 0.08, dram_throughput_pct=90.9, kernel_count=1.0,
             dram_bytes=1.34e8, achieved_occupancy_pct=80.0),
        case("triton", "1024x1024", 0.0125, device_iqr_ms=0.002),
        case("triton", "2048x2048", 0.75, device_iqr_ms=0.1),
        case("eager", "4096x8192", 0.20, correct=False),
        case("eager", "1024x1024", 0.02, correct=False),
    ],
)  # fmt: skip


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return compare.compare_runs(A, B)


def row(df: pd.DataFrame, variant: str, shape: str) -> pd.Series:
    (index,) = df.index[(df["variant"] == variant) & (df["shape"] == shape)]
    return df.loc[index]


def test_flags(table: pd.DataFrame) -> None:
    flags = {(r.variant, r.shape): r.flag for r in table.itertuples()}
    assert flags == {
        ("triton", "4096x8192"): "faster",
        ("triton", "1024x1024"): "slower",
        # +50%, but from medians with wide spreads: the interval is wider than UNSTABLE_WIDTH
        ("triton", "2048x2048"): "unstable",
        ("eager", "4096x8192"): "failed in B",
        ("old", "4096x8192"): "only in A",
        ("eager", "1024x1024"): "failed in both",
        ("new", "4096x8192"): "only in B",
    }


def test_baseline_column(table: pd.DataFrame) -> None:
    assert table.columns[:5].tolist() == ["kernel", "variant", "dtype", "shape", "baseline"]
    assert table.loc[table["variant"] == "eager", "baseline"].tolist() == [True, True]
    assert not table.loc[table["variant"] != "eager", "baseline"].any()


def test_a_order_first_then_new_cases(table: pd.DataFrame) -> None:
    assert list(zip(table["variant"], table["shape"], strict=True)) == [
        ("triton", "4096x8192"), ("triton", "1024x1024"), ("triton", "2048x2048"),
        ("eager", "4096x8192"), ("old", "4096x8192"), ("eager", "1024x1024"),
        ("new", "4096x8192"),
    ]  # fmt: skip


def test_latency_deltas_are_b_minus_a(table: pd.DataFrame) -> None:
    r = row(table, "triton", "4096x8192")
    assert (r.device_p50_ms_a, r.device_p50_ms_b) == (0.10, 0.08)
    assert r.delta_ms == pytest.approx(-0.02)
    assert r.delta_pct == pytest.approx(-20.0)
    # no samples stored: the interval comes from p50, IQR and repetitions
    assert r.ratio == pytest.approx(0.8) and r.ci_low < 0.8 < r.ci_high < 1.0
    assert r.method == "normal approximation"
    slower = row(table, "triton", "1024x1024")
    assert slower.delta_pct == pytest.approx(25.0)
    assert slower.ratio == pytest.approx(1.25)
    assert 1.0 < slower.ci_low < slower.ratio < slower.ci_high
    wide = row(table, "triton", "2048x2048")
    assert wide.ci_high / wide.ci_low - 1 > 0.2


def test_counter_deltas(table: pd.DataFrame) -> None:
    r = row(table, "triton", "4096x8192")
    assert r.dram_throughput_pct_delta == pytest.approx(18.9)
    assert r.achieved_occupancy_pct_delta == pytest.approx(20.0)
    assert r.dram_bytes_delta == pytest.approx(-1.36e8)
    assert r.kernel_count_delta == 0
    assert math.isnan(row(table, "triton", "1024x1024").dram_throughput_pct_delta)


def test_only_in_one_run_has_no_delta(table: pd.DataFrame) -> None:
    r = row(table, "old", "4096x8192")
    assert r.device_p50_ms_a == 0.30 and math.isnan(r.device_p50_ms_b) and math.isnan(r.delta_ms)


def test_runs_without_counter_columns_still_compare() -> None:
    bare = run_of("bare", [{"kernel": "rmsnorm", "variant": "triton", "dtype": "float16",
                            "shape": "4096x8192", "correct": True, "device_p50_ms": 0.09,
                            "device_iqr_ms": 0.001}])  # fmt: skip
    df = compare.compare_runs(A, bare)
    r = row(df, "triton", "4096x8192")
    assert r.flag == "faster"
    assert math.isnan(r.kernel_count_b) and math.isnan(r.kernel_count_delta)


def test_json_is_a_list_of_rows(table: pd.DataFrame) -> None:
    out = json.loads(compare.to_json(table))
    assert len(out) == 7
    assert out[0]["flag"] == "faster" and out[0]["delta_pct"] == pytest.approx(-20.0)
    assert out[4]["device_p50_ms_b"] is None
    assert {"kernel", "variant", "dtype", "shape", "device_p50_ms_a", "device_p50_ms_b",
            "delta_ms", "flag", "ratio", "ci_low", "ci_high", "method", "dram_bytes_delta",
            "kernel_count_delta"} <= set(out[0])  # fmt: skip
    assert out[0]["ci_low"] < out[0]["ratio"] < out[0]["ci_high"]
    assert out[0]["outcome"] == "faster" and out[4]["outcome"] is None  # only in A: no interval


def test_csv_round_trips(table: pd.DataFrame) -> None:
    back = pd.read_csv(io.StringIO(compare.to_csv(table)))
    assert list(back.columns) == list(table.columns)
    assert list(back["flag"]) == list(table["flag"])


def test_markdown_table(table: pd.DataFrame) -> None:
    md = compare.to_markdown(table)
    lines = md.strip().splitlines()
    assert lines[0] == (
        "**A: run-a  vs  B: run-b** (times in ms; B/A is the ratio of device-time medians, 95% CI)"
    )
    assert len([x for x in lines if x.startswith("| rmsnorm")]) == 7
    assert (
        "| rmsnorm triton float16 4096x8192 | 0.1 ms | 0.08 ms | 0.800 [0.788, 0.812] "
        "| faster | 1 -> 1 | 270.0 MB -> 134.0 MB | 72.0% -> 90.9% | 60.0% -> 80.0% |" in md
    )


def test_markdown_summary_follows_the_table(table: pd.DataFrame) -> None:
    lines = compare.to_markdown(table).strip().splitlines()
    assert lines[-4:] == [
        "- triton: 1 faster, 1 slower, 0 noise, 1 unstable of 3 (float16 4096x8192 -20.0%, "
        "float16 1024x1024 +25.0%)",
        "- old: 0 faster, 0 slower, 0 noise, 0 unstable, 1 only in A of 1",
        "- new: 0 faster, 0 slower, 0 noise, 0 unstable, 1 only in B of 1",
        "- baselines: 0 faster, 0 slower, 0 noise, 0 unstable, 1 failed in B, 1 failed in both "
        "of 2",
    ]


def drift_runs(torch_b: str) -> pd.DataFrame:
    """The lab kernel 3% slower, beyond its spread; a baseline 5% faster with the same code."""
    a = run_of("a", [case("triton", "4096x8192", 0.100, device_iqr_ms=0.001),
                     case("eager", "4096x8192", 0.200, device_iqr_ms=0.001),
                     case("eager", "1024x1024", 0.020, device_iqr_ms=0.001)])  # fmt: skip
    b_rows = [case("triton", "4096x8192", 0.103, device_iqr_ms=0.001),
              case("eager", "4096x8192", 0.190, device_iqr_ms=0.001),
              case("eager", "1024x1024", 0.0205, device_iqr_ms=0.001)]  # fmt: skip
    b = run_of("b", b_rows, torch=torch_b)
    return compare.compare_runs(a, b)


def test_baselines_that_moved_with_the_same_code_are_called_drift() -> None:
    lab, base = compare.summary(drift_runs("2.11.0"))
    assert lab == "triton: 0 faster, 1 slower, 0 noise, 0 unstable of 1 (float16 4096x8192 +3.0%)"
    assert base == (
        "baselines: 1 faster, 0 slower, 1 noise, 0 unstable of 2; the 1 that moved did so by a "
        "median 5.0% (largest -5.0% at rmsnorm eager float16 4096x8192); the baselines ran the "
        "same code in both runs, so lab changes of that size may be run-to-run drift the in-run "
        "spread does not capture"
    )


def test_baselines_under_another_torch_may_have_changed() -> None:
    _, base = compare.summary(drift_runs("2.12.0"))
    assert base.endswith("; torch changed (2.11.0 -> 2.12.0), so they may have changed too")


def test_terminal_table_and_gpu_warning() -> None:
    other = run_of("run-c", [case("triton", "4096x8192", 0.2)], gpu="NVIDIA A100")
    console = Console(file=io.StringIO(), width=220, record=True)
    with pytest.raises(ProfkitError, match="different GPU models .*--across-gpus"):
        compare.compare_runs(A, other)
    compare.render_terminal(compare.compare_runs(A, other, across_gpus=True), console)
    out = console.export_text()
    assert "different GPUs: NVIDIA H200 vs NVIDIA A100" in out
    assert "slower" in out and "only in A" in out
    assert "triton: 0 faster, 1 slower, 0 noise, 0 unstable, 2 only in A of 3" in out


def test_terminal_fits_one_line_per_case_in_160_columns(table: pd.DataFrame) -> None:
    console = Console(file=io.StringIO(), width=160, record=True)
    compare.render_terminal(table, console)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("A: run-a  vs  B: run-b  (times in ms)")
    # one kernel compared: rows name the case without it, times without their unit
    row = next(line for line in lines if line.lstrip().startswith("triton float16 4096x8192"))
    # B/A 0.8: sqrt(pi/2) * (IQR / 1.349) / sqrt(100) per median, 1.96 of them on the log scale
    assert row.split()[3:8] == ["0.1", "0.08", "0.800", "[0.788,", "0.812]"]
    assert row.split()[8] == "faster"


def test_cases_timed_on_other_gpu_models_are_not_compared_unless_asked() -> None:
    # a run spread over a cluster: each case carries its GPU; one case ran on another model
    mixed = run_of("run-m", [case("triton", "4096x8192", 0.2, gpu="NVIDIA A100"),
                             case("eager", "4096x8192", 0.2, gpu="NVIDIA H200")])  # fmt: skip
    with pytest.raises(ProfkitError, match=r"^1 case\(s\) ran on different GPU models"):
        compare.compare_runs(A, mixed)
    df = compare.compare_runs(A, mixed, across_gpus=True)
    assert (
        df.set_index("variant").loc["triton"].query("shape == '4096x8192'").flag.item() == "slower"
    )
    same = run_of("run-s", [case("eager", "4096x8192", 0.2, gpu="NVIDIA H200")])
    assert len(compare.compare_runs(A, same)) == len(A.cases)
