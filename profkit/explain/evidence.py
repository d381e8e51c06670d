"""Reading a stored row, and writing a number the way a finding quotes it.

Evidence keys are stable identifiers (a column name, or a fixed derived name such as
`dram_read_over_model_x`); the unit a number is quoted in follows from its key's suffix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from profkit.explain.model import plain

# --- formatting -----------------------------------------------------------------------------------


def sig(value: float, digits: int = 3) -> str:
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
def _times(v: float) -> str:
    """A ratio as 'N.Nx'; near 1 with two decimals, so a 4% gap never reads as '1.0x slower'."""
    return f"{v:.2f}x" if f"{v:.1f}" == "1.0" else f"{v:.1f}x"


_FORMATS: tuple[tuple[str, Callable[[float], str]], ...] = (
    ("pct_peak_bw", _pct),
    ("pct_peak_flops", _pct),
    ("_pct", _pct),
    ("_ms", lambda v: f"{sig(v)} ms"),
    ("_us", lambda v: f"{sig(v)} us"),
    ("bytes", _bytes),
    ("bytes_read", _bytes),
    ("bytes_write", _bytes),
    ("bytes_requested", _bytes),
    ("_gbps", lambda v: f"{v:.0f} GB/s"),
    ("_tflops", lambda v: f"{sig(v)} TFLOP/s"),
    ("_mhz", lambda v: f"{v:.0f} MHz"),
    ("flop_per_byte", lambda v: f"{sig(v)} FLOP/B"),
    ("_x", lambda v: _times(v)),
    ("_ratio", lambda v: f"{v:.2f}"),
)

# Counters that count things: quoted as integers ("512 threads", never "512.0").
INT_KEYS = (
    "kernel_count",
    "grid_size",
    "block_size",
    "registers_per_thread",
    "sm_count",
    "idle_sms",
    "launches",
)


def format_value(key: str, value: object) -> str:
    """How a finding's text writes evidence[key]: the unit follows from the key's suffix."""
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    for suffix, fmt in _FORMATS:
        if key.endswith(suffix):
            return fmt(float(value))
    if isinstance(value, int) or any(key.endswith(k) for k in INT_KEYS):
        return str(int(value))
    return sig(float(value))


class Evidence(dict):
    """A finding's numbers by key; `put` records one, skipping values that are absent."""

    def put(self, key: str, value: object) -> object:
        if value is None:
            return None
        if any(key.endswith(k) for k in INT_KEYS) and isinstance(value, float):
            value = int(round(value))
        self[key] = plain(value)
        return self[key]


# --- reading a stored row -------------------------------------------------------------------------


def num(row: Mapping, key: str) -> float | None:
    try:
        value = float(row.get(key))
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def text(row: Mapping, key: str) -> str | None:
    value = row.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value).strip() or None


def as_bool(value: object) -> bool:
    """A bool cell of a stored table: CSV gives bool, or text once the column holds empty cells."""
    return str(value).strip().lower() in ("true", "1", "1.0")


def where(row: Mapping) -> str:
    return f"{row['dtype']} {row['shape']}"


def timed(row: Mapping) -> bool:
    return as_bool(row.get("correct")) and num(row, "device_p50_ms") is not None


def step_timed(row: Mapping) -> bool:
    """A correct case of a step-latency run (decode): timed as whole steps, not as one call."""
    return as_bool(row.get("correct")) and num(row, "step_p50_ms") is not None
