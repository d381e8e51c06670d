"""Two runs side by side: the same cases matched, latency and counter deltas, a noise-aware flag.

Deltas are B - A (B is the newer run as the user names them): "faster" means B is faster than A,
and only when the change is larger than the timing spread of both (`explain.timing_outcome`).
"""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from profkit.explain import as_bool, format_value, timing_outcome
from profkit.store import Run

KEYS = ["kernel", "variant", "dtype", "shape"]
# Counters worth a delta column: what a kernel change moves (traffic, occupancy, fusion, time).
DELTA_COUNTERS = (
    "dram_throughput_pct",
    "memory_throughput_pct",
    "sm_throughput_pct",
    "achieved_occupancy_pct",
    "dram_bytes",
    "kernel_count",
    "ncu_duration_ms",
)
_COMPARED = ("correct", "p50_ms", "spread_ms", *DELTA_COUNTERS)
_FLAG_STYLE = {"faster": "green", "slower": "red", "noise": "dim"}


def _side(run: Run) -> pd.DataFrame:
    # every column on both sides, even where a run lacks it (timing only), so the merge below
    # always yields the _a/_b pairs and the output keeps one schema
    side = run.cases.reindex(columns=[*KEYS, *_COMPARED]).astype({k: str for k in KEYS})
    side["_present"] = True
    side["_pos"] = range(len(side))
    return side


def compare_runs(run_a: Run, run_b: Run) -> pd.DataFrame:
    """One row per (kernel, variant, dtype, shape) in either run, A's order first."""
    merged = pd.merge(_side(run_a), _side(run_b), on=KEYS, how="outer", suffixes=("_a", "_b"))
    # an outer merge sorts its keys; put A's cases first in A's order, then B's new ones
    merged = merged.sort_values(["_pos_a", "_pos_b"], na_position="last", ignore_index=True)
    out = merged[KEYS].copy()
    for col in ("correct", "p50_ms"):
        out[f"{col}_a"], out[f"{col}_b"] = merged[f"{col}_a"], merged[f"{col}_b"]
    out["delta_ms"] = out["p50_ms_b"] - out["p50_ms_a"]
    out["delta_pct"] = out["delta_ms"] / out["p50_ms_a"] * 100
    out["spread_ms"] = merged[["spread_ms_a", "spread_ms_b"]].max(axis=1)
    out["flag"] = [_flag(row) for row in merged.to_dict("records")]
    for col in DELTA_COUNTERS:
        out[f"{col}_a"], out[f"{col}_b"] = merged[f"{col}_a"], merged[f"{col}_b"]
        out[f"{col}_delta"] = merged[f"{col}_b"] - merged[f"{col}_a"]
    out.attrs.update(run_a=run_a.run_id, run_b=run_b.run_id, gpu_a=_gpu(run_a), gpu_b=_gpu(run_b))
    return out


def _gpu(run: Run) -> str:
    return str((run.manifest.get("fingerprint") or {}).get("gpu", "unknown GPU"))


def _flag(row: dict) -> str:
    if pd.isna(row["_present_a"]):
        return "only in B"
    if pd.isna(row["_present_b"]):
        return "only in A"
    failed = [s.upper() for s in ("a", "b") if not _timed(row, s)]
    if failed:
        # an incorrect case keeps its timing empty: there is nothing to compare
        return "failed in " + (failed[0] if len(failed) == 1 else "both")
    return timing_outcome(row["p50_ms_b"], row["p50_ms_a"], row["spread_ms_b"], row["spread_ms_a"])


def _timed(row: dict, side: str) -> bool:
    return as_bool(row.get(f"correct_{side}")) and pd.notna(row.get(f"p50_ms_{side}"))


# --- output --------------------------------------------------------------------------------------


def _name(row: dict) -> str:
    return f"{row['kernel']} {row['variant']} {row['dtype']} {row['shape']}"


def _cell(key: str, value: object) -> str:
    return "" if pd.isna(value) else format_value(key, value)


def _pair(row: dict, col: str) -> str:
    a, b = row.get(f"{col}_a"), row.get(f"{col}_b")
    if pd.isna(a) and pd.isna(b):
        return ""
    return f"{_cell(col, a) or '-'} -> {_cell(col, b) or '-'}"


def _signed_pct(value: object) -> str:
    return "" if pd.isna(value) else f"{value:+.1f}%"


def _signed_ms(value: object) -> str:
    if pd.isna(value):
        return ""
    return ("+" if value >= 0 else "-") + format_value("delta_ms", abs(value))


_COLUMNS = ("case", "A p50", "B p50", "delta", "delta %", "spread", "flag", "kernels", "DRAM",
            "DRAM %", "occupancy")  # fmt: skip


def _cells(row: dict) -> list[str]:
    return [
        _name(row),
        _cell("p50_ms", row["p50_ms_a"]),
        _cell("p50_ms", row["p50_ms_b"]),
        _signed_ms(row["delta_ms"]),
        _signed_pct(row["delta_pct"]),
        _cell("spread_ms", row["spread_ms"]),
        row["flag"],
        _pair(row, "kernel_count"),
        _pair(row, "dram_bytes"),
        _pair(row, "dram_throughput_pct"),
        _pair(row, "achieved_occupancy_pct"),
    ]


def _title(df: pd.DataFrame) -> str:
    title = f"A: {df.attrs.get('run_a', '?')}  vs  B: {df.attrs.get('run_b', '?')}"
    if df.attrs.get("gpu_a") != df.attrs.get("gpu_b"):
        title += f"  (different GPUs: {df.attrs.get('gpu_a')} vs {df.attrs.get('gpu_b')})"
    return title


def render_terminal(df: pd.DataFrame, console: Console) -> None:
    table = Table(title=_title(df), title_justify="left")
    for name in _COLUMNS:
        table.add_column(name, justify="left" if name in ("case", "flag") else "right")
    for row in df.to_dict("records"):
        # Text cells, not markup strings: a variant or kernel name may contain "[...]"
        cells = [Text(cell) for cell in _cells(row)]
        cells[6].stylize(_FLAG_STYLE.get(row["flag"], "yellow"))
        table.add_row(*cells)
    console.print(table)


def to_markdown(df: pd.DataFrame) -> str:
    lines = [
        f"**{_title(df)}**",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
    ]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in df.to_dict("records")]
    return "\n".join(lines) + "\n"


def to_json(df: pd.DataFrame) -> str:
    """A list of rows (NaN as null), every column of `compare_runs`."""
    return df.to_json(orient="records", indent=2)


def to_csv(df: pd.DataFrame) -> str:
    return df.to_csv(index=False)
