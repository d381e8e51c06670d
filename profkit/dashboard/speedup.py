"""Speedup of each lab variant over each baseline, per dtype and shape, on device time, with the 95%
confidence interval of profkit.stats.compare_cases (bootstrap over the run's samples; the
normal approximation from stored percentiles for runs that kept none)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import plotly.graph_objects as go

from profkit import stats
from profkit.dashboard.common import (
    BASELINE_COLORS,
    Layout,
    grid,
    layout,
    text,
    timed,
)
from profkit.store import Run

# Each baseline keeps its colour in every panel; the lab variant is told apart by its marker.
LAB_SYMBOLS = ("diamond", "square", "triangle-up")
CALLED = ("faster", "slower")  # outcomes where the interval calls a difference


@dataclass(frozen=True)
class Speedup:
    """lab over baseline at one dtype and shape: speedup = baseline time / lab time (> 1: the lab
    variant is faster), its 95% interval, and the outcome from the lab variant's side."""

    lab: str
    baseline: str
    dtype: str
    shape: str
    lab_case: str
    baseline_case: str
    speedup: float
    low: float
    high: float
    outcome: str
    from_samples: bool  # the interval is a bootstrap over raw samples
    lab_ms: float
    baseline_ms: float

    @property
    def method(self) -> str:
        return stats.BOOTSTRAP if self.from_samples else stats.NORMAL_APPROXIMATION


def speedups(run: Run) -> list[Speedup]:
    """Every (lab, baseline) pair timed at the same dtype and shape, in the sweep's order."""
    lay = layout(run)
    cases = timed(run.cases).astype({"variant": str, "dtype": str, "shape": str})
    by_key = {
        (r["variant"], r["dtype"], r["shape"]): r
        for r in cases.drop_duplicates(["variant", "dtype", "shape"], keep="last").to_dict(
            "records"
        )
    }
    out = []
    labs = [v.name for v in lay.variants if not v.baseline]
    bases = [v.name for v in lay.variants if v.baseline]
    for lab in labs:
        for base in bases:
            for dtype in lay.dtypes:
                for shape in lay.shapes:
                    a, b = by_key.get((lab, dtype, shape)), by_key.get((base, dtype, shape))
                    if a is None or b is None:
                        continue
                    # ratio = lab time / baseline time
                    c = stats.compare_cases(a, b, run.samples)
                    out.append(
                        Speedup(
                            lab, base, dtype, shape, str(a["case"]), str(b["case"]),
                            _inv(c.ratio), _inv(c.ci_high), _inv(c.ci_low), c.outcome,
                            c.from_samples, float(a["device_p50_ms"]), float(b["device_p50_ms"]),
                        )
                    )  # fmt: skip
    return out


def best_peers(points: list[Speedup]) -> list[Speedup]:
    """Each lab variant against its best peer per case: of the pairs at one lab variant, dtype
    and shape, the one whose baseline has the lowest device p50 there (compile at one shape,
    Liger at another), in the sweep's order."""
    best: dict[tuple[str, str, str], Speedup] = {}
    for p in points:
        key = (p.lab, p.dtype, p.shape)
        if key not in best or p.baseline_ms < best[key].baseline_ms:
            best[key] = p
    return list(best.values())


def _inv(x: float) -> float:
    """lab/baseline -> baseline/lab; an interval reaching 0 (never from positive times) -> inf."""
    return 1.0 / x if x > 0 else math.inf


def methods_note(points: list[Speedup], measure: str = "device time") -> str:
    """How the intervals were computed, in words for the page (plain text, escaped there)."""
    if all(p.from_samples for p in points):
        return f"95% intervals: bootstrap over the run's raw {measure.replace(' ', '-')} samples."
    return (
        "95% intervals: normal approximation from the stored p50, IQR and repetition count "
        "(this run kept no raw samples, e.g. a schema-1 run): an estimate, not a bootstrap."
    )


def speedup_figure(
    run: Run,
    points: list[Speedup] | None = None,
    measure: str = "device time",
    over: str = "each baseline",
) -> go.Figure | None:
    """One panel per dtype: x the sweep's shapes, y speedup (log), one series per lab-baseline
    pair with its 95% interval as error bars and the speedup written beside each point. A
    baseline keeps its colour in every figure of the run (the sweep's order of baselines); over
    names what the points are against (best_peers' points: "its best peer per case")."""
    points = speedups(run) if points is None else points
    if not points:
        return None
    lay = layout(run)
    fig = grid(lay, [f"speedup of the lab variant over {over} ({measure})"])
    pairs = list(dict.fromkeys((p.lab, p.baseline) for p in points))
    labs = list(dict.fromkeys(p.lab for p in points))
    bases = [v.name for v in lay.variants if v.baseline]
    n = len(pairs)
    for r, dtype in enumerate(lay.dtypes, start=1):
        for j, (lab, base) in enumerate(pairs):
            sel = [p for p in points if (p.lab, p.baseline, p.dtype) == (lab, base, dtype)]
            if sel:
                fig.add_trace(_trace(lay, sel, j, n, labs.index(lab), bases.index(base)), r, 1)
        fig.add_hline(y=1.0, line={"color": "#000000", "width": 1, "dash": "dot"}, row=r, col=1)
        fig.update_yaxes(type="log", title_text="x faster than baseline", row=r, col=1)
    seen: set[str] = set()
    for trace in fig.data:
        trace.showlegend = trace.legendgroup not in seen
        seen.add(trace.legendgroup)
    return fig


def _label(v: float) -> str:
    """The speedup written beside a point: two significant digits, three near 1 (1.04x, not 1x)."""
    if v >= 10:
        return f"{v:.0f}x"
    return f"{v:.3g}x" if 0.9 <= v < 1.1 else f"{v:.2g}x"


def _trace(lay: Layout, sel: list[Speedup], j: int, n: int, lab_i: int, base_i: int) -> go.Scatter:
    step = 0.8 / max(n, 1)
    offset = (j - (n - 1) / 2) * step
    x = [lay.shapes.index(p.shape) + offset for p in sel]
    y = [p.speedup for p in sel]
    label = text(f"{sel[0].lab} over {sel[0].baseline}")
    symbol = LAB_SYMBOLS[lab_i % len(LAB_SYMBOLS)]
    custom = [
        [
            text(p.lab_case),
            text(p.baseline_case),
            p.low,
            p.high,
            p.outcome,
            p.method,
            p.lab_ms * 1e3,
            p.baseline_ms * 1e3,
        ]
        for p in sel
    ]
    return go.Scatter(
        x=x,
        y=y,
        mode="markers+text",
        text=[_label(v) for v in y],
        textposition="middle right",
        textfont={"size": 9},
        name=label,
        legendgroup=f"{sel[0].lab}\x1f{sel[0].baseline}",
        marker={
            "color": BASELINE_COLORS[base_i % len(BASELINE_COLORS)],
            # hollow where the interval does not call a difference (noise or unstable)
            "symbol": [symbol + ("" if p.outcome in CALLED else "-open") for p in sel],
            "size": 8,
            "line": {"width": 1, "color": "#000000"},
        },
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [p.high - p.speedup for p in sel],
            "arrayminus": [p.speedup - p.low for p in sel],
            "thickness": 1.2,
            "width": 3,
        },
        customdata=custom,
        hovertemplate=(
            f"<b>{label}: %{{y:.3g}}x</b><br>95% CI %{{customdata[2]:.3g}}x"
            "..%{customdata[3]:.3g}x (%{customdata[5]})<br>outcome: %{customdata[4]}"
            "<br>%{customdata[0]}: %{customdata[6]:.4g} us<br>%{customdata[1]}: "
            "%{customdata[7]:.4g} us<extra></extra>"
        ),
    )
