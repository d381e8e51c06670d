"""Two runs side by side: the same cases matched, device-time ratios with confidence intervals,
counter deltas.

Ratios and deltas are B against A (B is the newer run as the user names them): "faster" means B is
faster than A, decided by `profkit.stats` on device time: the 95% interval of the ratio of
medians excludes 1 and the gap clears the practical floor; a wide interval is "unstable". The
summary under the table counts the flags per lab variant, says how far the baselines, whose code did
not change, moved between the runs, and warns when the runs ran at different clocks or throttled.
"""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from profkit import stats, terminal
from profkit.errors import ProfkitError
from profkit.explain import as_bool, format_value
from profkit.store import Run
from profkit.textsafe import md_escape
from profkit.thresholds import CLOCK_MISMATCH_SHARE

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
_COMPARED = (
    "case",
    "correct",
    "device_p50_ms",
    "device_iqr_ms",
    "device_reps",
    "sm_clock_mhz",
    "clock_note",
    *DELTA_COUNTERS,
)
_FLAG_STYLE = {"faster": "green", "slower": "red", "noise": "dim", "unstable": "yellow"}


def _side(run: Run) -> pd.DataFrame:
    # every column on both sides, even where a run lacks it (timing only), so the merge below
    # always yields the _a/_b pairs and the output keeps one schema
    side = run.cases.reindex(columns=[*KEYS, "baseline", *_COMPARED]).astype({k: str for k in KEYS})
    # each case's GPU model: its own column in a run spread over a cluster, else the run's GPU
    gpu = run.cases.get("gpu", pd.Series(None, index=run.cases.index, dtype=object))
    gpu = gpu.where(gpu.notna(), (run.manifest.get("fingerprint") or {}).get("gpu"))
    side["gpu"] = gpu.where(~gpu.astype(str).str.startswith("none"))  # interpret: no GPU
    # object first: a run without a case column reads it as float NaN, which strings may not fill
    side["case"] = side["case"].astype(object).fillna(pd.Series(range(len(side))).astype(str))
    side["baseline"] = side["baseline"].map(as_bool)
    side["_present"] = True
    side["_pos"] = range(len(side))
    return side


def compare_runs(run_a: Run, run_b: Run, across_gpus: bool = False) -> pd.DataFrame:
    """One row per (kernel, variant, dtype, shape) in either run, A's order first. Cases measured
    on different GPU models are refused (ProfkitError) unless across_gpus."""
    merged = pd.merge(_side(run_a), _side(run_b), on=KEYS, how="outer", suffixes=("_a", "_b"))
    if not across_gpus:
        _same_gpus(merged)
    # an outer merge sorts its keys; put A's cases first in A's order, then B's new ones
    merged = merged.sort_values(["_pos_a", "_pos_b"], na_position="last", ignore_index=True)
    out = merged[KEYS].copy()
    out["baseline"] = merged["baseline_a"].fillna(merged["baseline_b"]).astype(bool)
    for col in ("correct", "device_p50_ms"):
        out[f"{col}_a"], out[f"{col}_b"] = merged[f"{col}_a"], merged[f"{col}_b"]
    out["delta_ms"] = out["device_p50_ms_b"] - out["device_p50_ms_a"]
    out["delta_pct"] = out["delta_ms"] / out["device_p50_ms_a"] * 100
    intervals = [_interval(row, run_a, run_b) for row in merged.to_dict("records")]
    for key in ("ratio", "ci_low", "ci_high", "outcome", "method"):
        out[key] = [c.as_dict()[key] if c else None for c in intervals]
    interpret = {"a": run_a.interpret, "b": run_b.interpret}
    out["flag"] = [
        _flag(row, c, interpret)
        for row, c in zip(merged.to_dict("records"), intervals, strict=True)
    ]
    for col in DELTA_COUNTERS:
        out[f"{col}_a"], out[f"{col}_b"] = merged[f"{col}_a"], merged[f"{col}_b"]
        out[f"{col}_delta"] = merged[f"{col}_b"] - merged[f"{col}_a"]
    out.attrs.update(
        run_a=run_a.run_id,
        run_b=run_b.run_id,
        gpu_a=_gpu(run_a),
        gpu_b=_gpu(run_b),
        torch_a=_torch(run_a),
        torch_b=_torch(run_b),
        clock_a=_median_clock(run_a),
        clock_b=_median_clock(run_b),
        throttled_a=_throttled(run_a),
        throttled_b=_throttled(run_b),
        in_both=int((merged["_present_a"].notna() & merged["_present_b"].notna()).sum()),
    )
    return out


def _same_gpus(merged: pd.DataFrame) -> None:
    """A case timed on one GPU model is not compared with one timed on another, unless asked."""
    both = merged[merged["gpu_a"].notna() & merged["gpu_b"].notna()]
    differ = both[both["gpu_a"].astype(str) != both["gpu_b"].astype(str)]
    if not differ.empty:
        row = differ.iloc[0]
        raise ProfkitError(
            f"{len(differ)} case(s) ran on different GPU models ({row['gpu_a']} in A, "
            f"{row['gpu_b']} in B, e.g. {row['variant']} {row['dtype']} {row['shape']}): their "
            "times do not compare; pass --across-gpus to compare them anyway"
        )


def _median_clock(run: Run) -> float | None:
    if "sm_clock_mhz" not in run.cases:
        return None
    col = pd.to_numeric(run.cases["sm_clock_mhz"], errors="coerce").dropna()
    return None if col.empty else float(col.median())


def _throttled(run: Run) -> int:
    flags = run.cases.get("clock_throttled")
    return 0 if flags is None else int(flags.map(as_bool).sum())


def _interval(row: dict, run_a: Run, run_b: Run) -> stats.MedianRatio | None:
    """B against A on device time, where both sides were timed."""
    if not (_timed(row, "a") and _timed(row, "b")):
        return None
    side = {s: {k.removesuffix(f"_{s}"): v for k, v in row.items() if k.endswith(f"_{s}")}
            for s in ("a", "b")}  # fmt: skip
    return stats.compare_cases(side["b"], side["a"], run_b.samples, run_a.samples)


def _gpu(run: Run) -> str:
    return str((run.manifest.get("fingerprint") or {}).get("gpu", "unknown GPU"))


def _torch(run: Run) -> str:
    return str((run.manifest.get("fingerprint") or {}).get("torch", "unknown torch"))


def _flag(row: dict, interval: stats.MedianRatio | None, interpret: dict[str, bool]) -> str:
    if pd.isna(row["_present_a"]):
        return "only in B"
    if pd.isna(row["_present_b"]):
        return "only in A"
    failed = [s.upper() for s in ("a", "b") if not as_bool(row.get(f"correct_{s}"))]
    if failed:
        # an incorrect case keeps its timing empty: there is nothing to compare
        return "failed in " + (failed[0] if len(failed) == 1 else "both")
    # correct but not timed (an interpret run checks correctness only): not a failure
    missing = [s for s in ("a", "b") if not _timed(row, s)]
    if missing:
        return _untimed_flag(missing, all(interpret[s] for s in missing))
    return interval.outcome if interval else "untimed"


def _untimed_flag(sides: list[str], interpret: bool) -> str:
    """'untimed in B (interpret run)', 'untimed (interpret runs)', 'untimed in both'."""
    if len(sides) == 2:
        return "untimed (interpret runs)" if interpret else "untimed in both"
    return f"untimed in {sides[0].upper()}" + (" (interpret run)" if interpret else "")


def _timed(row: dict, side: str) -> bool:
    return as_bool(row.get(f"correct_{side}")) and pd.notna(row.get(f"device_p50_ms_{side}"))


# --- output --------------------------------------------------------------------------------------


def _name(row: dict, kernel: bool = True) -> str:
    case = f"{row['variant']} {row['dtype']} {row['shape']}"
    return f"{row['kernel']} {case}" if kernel else case


def _cell(key: str, value: object) -> str:
    return "" if pd.isna(value) else format_value(key, value)


def _pair(row: dict, col: str) -> str:
    a, b = row.get(f"{col}_a"), row.get(f"{col}_b")
    if pd.isna(a) and pd.isna(b):
        return ""
    return f"{_cell(col, a) or '-'} -> {_cell(col, b) or '-'}"


def _signed_pct(value: object) -> str:
    return "" if pd.isna(value) else f"{value:+.1f}%"


def _ratio(row: dict) -> str:
    if row.get("ratio") is None or pd.isna(row["ratio"]):
        return ""
    return f"{row['ratio']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


_COLUMNS = ("case", "A p50", "B p50", "B/A [95% CI]", "flag", "kernels", "DRAM", "DRAM %",
            "occupancy")  # fmt: skip


def _cells(row: dict, kernel: bool = True) -> list[str]:
    return [
        _name(row, kernel),
        _cell("device_p50_ms", row["device_p50_ms_a"]),
        _cell("device_p50_ms", row["device_p50_ms_b"]),
        _ratio(row),
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


def summary(df: pd.DataFrame) -> list[str]:
    """One line per lab variant (what moved beyond the spread), then one on the baselines: their
    code is the same in both runs unless torch changed, so their flags measure run-to-run drift."""
    lines = [
        f"{variant}: {_flag_counts(group)}{_flagged(group)}"
        for variant, group in df[~df["baseline"]].groupby("variant", sort=False)
    ]
    base = df[df["baseline"]]
    if not base.empty:
        lines.append(f"baselines: {_flag_counts(base)}{_drift(df, base)}")
    return lines + _clock_warnings(df)


def _clock_warnings(df: pd.DataFrame) -> list[str]:
    out = []
    a, b = df.attrs.get("clock_a"), df.attrs.get("clock_b")
    if a and b and abs(b / a - 1) > CLOCK_MISMATCH_SHARE:
        out.append(
            f"warning: the runs ran at different SM clocks (median {a:.0f} MHz in A, {b:.0f} MHz "
            "in B): differences may be the clock, not the code"
        )
    for side in ("a", "b"):
        if df.attrs.get(f"throttled_{side}"):
            out.append(
                f"warning: {df.attrs[f'throttled_{side}']} case(s) of {side.upper()} ran "
                "throttled or at reduced clocks (clock_note in its cases.csv)"
            )
    return out


def _moved(group: pd.DataFrame) -> pd.DataFrame:
    return group[group["flag"].isin(("faster", "slower"))]


def _flag_counts(group: pd.DataFrame) -> str:
    counts = group["flag"].value_counts()
    timed = (
        "faster",
        "slower",
        "noise",
        "unstable",
    )  # always counted; "only in A" and the like when present
    flags = [*timed, *(f for f in counts.index if f not in timed)]
    return ", ".join(f"{counts.get(f, 0)} {f}" for f in flags) + f" of {len(group)}"


def _flagged(group: pd.DataFrame) -> str:
    moved = _moved(group)
    cases = [
        f"{r['dtype']} {r['shape']} {_signed_pct(r['delta_pct'])}" for _, r in moved.iterrows()
    ]
    return f" ({', '.join(cases)})" if cases else ""


def _drift(df: pd.DataFrame, base: pd.DataFrame) -> str:
    moved = _moved(base)
    if moved.empty:
        return ""
    widest = moved.loc[moved["delta_pct"].abs().idxmax()]
    median = moved["delta_pct"].abs().median()
    text = (
        f"; the {len(moved)} that moved did so by a median {median:.1f}% "
        f"(largest {_signed_pct(widest['delta_pct'])} at {_name(widest)})"
    )
    torch_a, torch_b = df.attrs.get("torch_a"), df.attrs.get("torch_b")
    if torch_a != torch_b:
        return text + f"; torch changed ({torch_a} -> {torch_b}), so they may have changed too"
    return text + (
        "; the baselines ran the same code in both runs, so lab changes of that size may be "
        "run-to-run drift the in-run spread does not capture"
    )


# Terminal columns whose unit (ms) the title states once instead of each cell.
_MS_COLUMNS = ("A p50", "B p50")


# on a narrow terminal, the columns kept longest
_KEEP = ("case", "flag", "B/A [95% CI]", "A p50", "B p50", "kernels", "DRAM %", "occupancy",
         "DRAM")  # fmt: skip


def render_terminal(df: pd.DataFrame, console: Console) -> None:
    # one line per case, as many columns as the console's width holds: no vertical rules, ms
    # stated once in the title, and the kernel named in each row only when several are compared
    several = df["kernel"].nunique() > 1
    rows = []
    for row in df.to_dict("records"):
        texts = [
            cell.removesuffix(" ms") if name in _MS_COLUMNS else cell
            for name, cell in zip(_COLUMNS, _cells(row, several), strict=True)
        ]
        # Text cells, not markup strings: a variant or kernel name may contain "[...]"
        cells = [Text(text) for text in texts]
        cells[_COLUMNS.index("flag")].stylize(_FLAG_STYLE.get(row["flag"], "yellow"))
        rows.append(cells)

    def build(names: list[str], kept_rows: list[list[object]]) -> Table:
        table = Table(
            title=f"{_title(df)}  (times in ms)",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        for name in names:
            table.add_column(name, justify="left" if name in ("case", "flag") else "right")
        for cells in kept_rows:
            table.add_row(*cells)
        return table

    table, dropped = terminal.fit_columns(list(_COLUMNS), rows, console.width, _KEEP, build)
    console.print(table)
    if dropped:
        wider = "--format csv or json has them all"
        console.print(Text(terminal.dropped_note(dropped, console.width, wider), style="dim"))
    for line in summary(df):
        console.print(Text(line))


def to_markdown(df: pd.DataFrame) -> str:
    # names come from users' files: escaped, so a kernel named "<img ...>" stays text
    lines = [
        f"**{md_escape(_title(df))}** (times in ms; B/A is the ratio of device-time medians, "
        "95% CI)",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
    ]
    lines += [
        "| " + " | ".join(md_escape(c) for c in _cells(row)) + " |" for row in df.to_dict("records")
    ]
    lines += ["", *(f"- {md_escape(line)}" for line in summary(df))] if len(df) else []
    return "\n".join(lines) + "\n"


def to_json(df: pd.DataFrame) -> str:
    """A list of rows (NaN as null), every column of `compare_runs`: per case the ratio B/A, its
    interval (ci_low, ci_high), the method and the outcome (flag)."""
    return df.to_json(orient="records", indent=2)


def to_csv(df: pd.DataFrame) -> str:
    return df.to_csv(index=False)
