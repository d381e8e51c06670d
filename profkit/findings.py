"""The Finding record, and the evidence and row reading shared by explain's findings and verdicts.

Every number a finding's text quotes is recorded in its `evidence` first (`_Evidence.q` records and
formats in one step), so each figure can be traced to a row of the stored run; the unit a number is
quoted in follows from its evidence key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import pandas as pd

from profkit.store import Run


@dataclass
class Finding:
    # "rmsnorm triton float16 4096x8192" (case), "rmsnorm" (verdict), a kernel name (launch)
    subject: str
    kind: str  # case | verdict | launch
    kernel: str
    bottleneck: str | None = None  # memory | compute | latency | balanced
    verdict: str | None = None  # win | active track | not a win (kind "verdict" only)
    evidence: dict[str, float | int | str] = field(default_factory=dict)
    text: str = ""
    next_step: str | None = None
    nvidia_rules: list[str] = field(default_factory=list)
    variant: str | None = None
    case: str | None = None  # the case (NVTX range) name: the row of cases.csv/kernels.csv

    def to_dict(self) -> dict:
        out = asdict(self)
        out["evidence"] = {k: plain_value(v) for k, v in self.evidence.items()}
        return out


# --- numbers: formatting and evidence -------------------------------------------------------------


def plain_value(value: object) -> object:
    """numpy scalars to Python ones, NaN to None: evidence must survive json.dumps."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _sig(value: float, digits: int = 3) -> str:
    """`digits` significant figures, never scientific notation: 0.0342, 1.1, 165."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _pct(value: float) -> str:
    # a share that rounds to 0.0% is still not zero: say "<0.1%" rather than a misleading "0.0%"
    return "<0.1%" if 0 < value < 0.05 else f"{value:.1f}%"


def _bytes(value: float) -> str:
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


# Key suffix -> formatter; the first match wins, so specific suffixes come first.
_FORMATS: tuple[tuple[str, Callable[[float], str]], ...] = (
    ("pct_peak_bw", _pct),
    ("pct_peak_flops", _pct),
    ("_pct", _pct),
    ("_ms", lambda v: f"{_sig(v)} ms"),
    ("bytes", _bytes),
    ("_gbps", lambda v: f"{v:.0f} GB/s"),
    ("_tflops", lambda v: f"{_sig(v)} TFLOP/s"),
    ("flop_per_byte", lambda v: f"{_sig(v)} FLOP/B"),
    ("_x", lambda v: f"{v:.1f}x"),
)


# Counters that count things: quoted as integers ("512 threads", never "512.0").
_INT_COLUMNS = ("kernel_count", "grid_size", "block_size", "registers_per_thread")


def format_value(key: str, value: object) -> str:
    """How a finding's text writes evidence[key]: the unit follows from the key's suffix."""
    if isinstance(value, str):
        return value
    for suffix, fmt in _FORMATS:
        if key.endswith(suffix):
            return fmt(float(value))
    if isinstance(value, int):
        return str(value)
    return _sig(float(value))


class _Evidence(dict):
    def q(self, key: str, value: object) -> str:
        """Record a number under key and return it as the text quotes it."""
        self[key] = plain_value(value)
        return format_value(key, self[key])

    def q_abs(self, key: str, value: float) -> str:
        """Record a signed number but quote its size: the text says "faster"/"slower" in words."""
        self[key] = plain_value(value)
        return format_value(key, abs(value))

    def q_case(self, row: Mapping, col: str) -> str:
        """Quote a column of a named case (the verdict sets cases side by side), recorded under
        "<dtype> <shape> <variant>: <col>"; the caller checks the value is there."""
        value = _num(row, col)
        key = f"{_where(row)} {row['variant']}: {col}"
        return self.q(key, int(value) if col in _INT_COLUMNS else value)


# --- reading a stored row -------------------------------------------------------------------------


def _num(row: Mapping, key: str) -> float | None:
    try:
        value = float(row.get(key))
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _nums(row: Mapping, *keys: str) -> list[float] | None:
    """Every value, or None when any is missing."""
    values = [_num(row, k) for k in keys]
    return None if any(v is None for v in values) else values


def _text(row: Mapping, key: str) -> str | None:
    value = row.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value).strip() or None


def as_bool(value: object) -> bool:
    """A bool cell of a stored table: CSV gives bool, or text once the column holds empty cells."""
    return str(value).strip().lower() in ("true", "1", "1.0")


def _count(n: float, word: str) -> str:
    return word if n == 1 else f"{word}s"


def _where(row: Mapping) -> str:
    return f"{row['dtype']} {row['shape']}"


def _has_counters(row: Mapping) -> bool:
    memory = (
        _num(row, "memory_throughput_pct") is not None
        or _num(row, "dram_throughput_pct") is not None
    )
    return memory and _num(row, "sm_throughput_pct") is not None


def _timed(row: Mapping) -> bool:
    return as_bool(row.get("correct")) and _num(row, "device_p50_ms") is not None


def _failure(row: Mapping, ev: _Evidence, prefix: str = "") -> str:
    """Why a case has no judged timing: incorrect, or (rarely) correct but untimed."""
    if as_bool(row.get("correct")):
        what, error = "not timed", _text(row, "error") or "no latency was recorded"
    else:
        what, error = "incorrect", _text(row, "error") or "the output does not match the reference"
    detail = ev.q(f"{prefix}error", error)
    rel_err = _num(row, "rel_err")
    if rel_err is not None:
        detail += f", rel_err {ev.q(f'{prefix}rel_err', rel_err)}"
    return f"{what} ({detail})"


# --- what a check found, and what it reads besides the counters -----------------------------------


class _Said(NamedTuple):
    """What a rule found (one or more sentences) and the next step it points to."""

    text: str
    step: str | None


@dataclass(frozen=True)
class _Setting:
    """What a diagnosis knows besides the counters: the spec's minimum bytes, the GPU's SMs."""

    min_bytes: float | None = None
    sm_count: int | None = None


@dataclass
class _RunContext:
    """What every finding of one run reads from its manifest and rules besides the case rows."""

    ceilings: Mapping
    no_counters: str | None  # why the whole run has no counters, None when it has them
    fix: str | None
    rules: pd.DataFrame | None
    sm_count: int | None = None

    @classmethod
    def of(cls, run: Run) -> _RunContext:
        counters = run.manifest.get("counters") or {}
        reason = None
        if run.timing_only:
            reason = (
                counters.get("reason") or f"counters status: {counters.get('status', 'unknown')}"
            )
        sm_count = _num(run.manifest.get("fingerprint") or {}, "sm_count")
        return cls(
            run.manifest.get("ceilings") or {},
            reason,
            counters.get("fix") or None,
            run.rules,
            int(sm_count) if sm_count else None,
        )
