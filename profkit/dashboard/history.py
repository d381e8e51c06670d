"""History: a kernel's stored runs over time, and what moved between consecutive runs.

Each run is summarised per variant and dtype by the geometric mean of its device p50 over the shapes
that every run of the kernel timed (so a run with a wider sweep does not look slower). Consecutive
runs are compared case by case with profkit.stats.compare_cases; the page lists the cases
that moved beyond noise and what changed in the environment between the two runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from profkit import stats, store
from profkit.dashboard.common import (
    BASELINE_COLORS,
    LAB_COLORS,
    ROW_HEIGHT_PX,
    TOP_LEGEND,
    text,
    timed,
)
from profkit.errors import ProfkitError
from profkit.explain import as_bool
from profkit.explain.decode_iterations import as_timed_frame
from profkit.store import Run

KEY = ["variant", "dtype", "shape"]
# manifest fields that differ between any two runs by construction
SKIPPED = frozenset({"run_id", "created", "complete"})
MOVED_SHOWN = 12  # largest moves listed per change of run; the counts cover all cases


@dataclass
class Change:
    """From one run of a kernel to the next: what differs between them, and what moved."""

    before: Run
    after: Run
    differences: list[tuple[str, str, str]]  # (what, before, after)
    counts: dict[str, int]  # outcome -> cases
    moved: list[dict] = field(default_factory=list)  # beyond noise, largest first


@dataclass
class History:
    kernel: str
    runs: list[Run]  # oldest first
    changes: list[Change]  # one per pair of consecutive runs
    common_shapes: list[str]


def stored_runs(root: Path, loaded: Sequence[Run] = ()) -> tuple[list[Run], list[str]]:
    """Every finished run under root, oldest first, and one line per run that could not be read
    (left out of the history, and named, never dropped silently). A run already loaded (the
    page's own) is not read again, nor its damage said again."""
    known = {r.path.resolve(): r for r in loaded}
    runs, problems = [], []
    for path in store.list_runs(root):
        run = known.get(path.resolve())
        if run is not None:
            if not run.damage:  # read with --force: said once already, and kept out
                runs.append(run)
            continue
        try:
            runs.append(store.load(path))
        except ProfkitError as exc:
            problems.append(str(exc))
    problems += [f"run {u.path.name} is damaged: {u.why}" for u in store.unreadable_runs(root)]
    return runs, problems


def created(run: Run) -> str:
    return str(run.manifest.get("created", ""))


def _table(run: Run) -> pd.DataFrame:
    cases = timed(as_timed_frame(run)).astype({k: str for k in KEY})
    return cases.drop_duplicates(KEY, keep="last").set_index(KEY)


def history(kernel: str, runs: list[Run]) -> History:
    """kernel's timed runs (any order; others are ignored), oldest first, one Change per pair."""
    # interpret runs check correctness and time nothing: no point in a history of device time
    mine = [r for r in runs if str(r.manifest.get("kernel")) == kernel and not r.interpret]
    mine = sorted({r.run_id: r for r in mine}.values(), key=lambda r: (created(r), r.run_id))
    shapes = [set(_table(r).index.get_level_values("shape")) for r in mine]
    common = sorted(set.intersection(*shapes), key=_shape_key) if shapes else []
    changes = [_change(a, b) for a, b in zip(mine, mine[1:], strict=False)]
    return History(kernel, mine, changes, common)


def _shape_key(shape: str) -> tuple:
    parts = shape.split("x")
    try:
        return (0, math.prod(int(p) for p in parts), shape)
    except ValueError:
        return (1, 0, shape)


def _change(before: Run, after: Run) -> Change:
    a, b = _table(before), _table(after)
    counts = {o: 0 for o in stats.OUTCOMES}
    moved = []
    for key in sorted(set(a.index) & set(b.index)):
        ra, rb = a.loc[key], b.loc[key]
        c = stats.compare_cases(rb, ra, after.samples, before.samples)
        counts[c.outcome] += 1
        if c.outcome in ("faster", "slower"):
            moved.append(
                {
                    "case": str(b.loc[key, "case"]),
                    "before_ms": float(a.loc[key, "device_p50_ms"]),
                    "after_ms": float(b.loc[key, "device_p50_ms"]),
                    "ratio": c.ratio,
                    "ci_low": c.ci_low,
                    "ci_high": c.ci_high,
                    "outcome": c.outcome,
                    "method": c.method,
                    "lab": not as_bool(b.loc[key].get("baseline", False)),
                }
            )
    # the lab's own cases first (the change under study), then baselines (the environment)
    moved.sort(key=lambda m: (not m["lab"], -abs(math.log(m["ratio"])), m["case"]))
    return Change(before, after, _differences(before, after), counts, moved)


def _differences(before: Run, after: Run) -> list[tuple[str, str, str]]:
    """What the two manifests record differently: top-level fields (source, command, schema, and
    any a capture adds, e.g. a commit), the fingerprint's versions and host, the sweep's options.
    Per-run values (ids, times, measured ceilings, clocks at capture) are not changes."""
    ma, mb = before.manifest, after.manifest
    out = _scalar_diff(ma, mb, "", SKIPPED)
    out += _scalar_diff(ma.get("fingerprint") or {}, mb.get("fingerprint") or {}, "fingerprint.")
    oa, ob = ma.get("options") or {}, mb.get("options") or {}
    for k in sorted(set(oa) | set(ob)):
        if oa.get(k) != ob.get(k):
            out.append((f"options.{k}", str(oa.get(k)), str(ob.get(k))))
    return out


def _scalar_diff(a: dict, b: dict, prefix: str, skip: frozenset = frozenset()) -> list:
    scalar = (str, int, float, bool, type(None))
    keys = sorted(k for k in set(a) | set(b) if k not in skip)
    return [
        (prefix + k, str(a.get(k)), str(b.get(k)))
        for k in keys
        if isinstance(a.get(k), scalar) and isinstance(b.get(k), scalar) and a.get(k) != b.get(k)
    ]


def history_figure(h: History) -> go.Figure | None:
    """Geometric-mean device p50 per variant over the common shapes, one panel per dtype, one
    point per run (x: the runs in time order)."""
    if len(h.runs) < 2 or not h.common_shapes:
        return None
    tables = [_table(r) for r in h.runs]
    dtypes = list(dict.fromkeys(d for t in tables for d in t.index.get_level_values("dtype")))
    variants = list(dict.fromkeys(v for t in tables for v in t.index.get_level_values("variant")))
    baseline = {}
    for t in tables:
        for (v, _, _), row in t.iterrows():
            baseline.setdefault(v, as_bool(row.get("baseline", False)))
    # short x labels (date, time and the id's random tail: unique, and level at any run count);
    # the full run id is in the hover. Full ids as labels were rotated and drawn over the panel
    # below and the next chart
    xs = [text(_short_label(r)) for r in h.runs]
    ids = [text(f"{r.run_id} ({created(r)[:16]})") for r in h.runs]
    fig = make_subplots(
        rows=len(dtypes),
        cols=1,
        shared_xaxes=True,  # one set of x labels, under the bottom panel
        subplot_titles=[
            text(f"{d}: geometric mean of device p50 over {len(h.common_shapes)} common shapes")
            for d in dtypes
        ],
        vertical_spacing=0.3 / len(dtypes),
    )
    lab_i = base_i = 0
    for v in variants:
        if baseline[v]:
            color, base_i = BASELINE_COLORS[base_i % len(BASELINE_COLORS)], base_i + 1
        else:
            color, lab_i = LAB_COLORS[lab_i % len(LAB_COLORS)], lab_i + 1
        for r, dtype in enumerate(dtypes, start=1):
            ys = [_geomean(t, v, dtype, h.common_shapes) for t in tables]
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines+markers",
                    name=text(f"{v} ({'baseline' if baseline[v] else 'lab'})"),
                    legendgroup=v,
                    showlegend=r == 1,
                    line={"color": color, "dash": "dot" if baseline[v] else "solid"},
                    marker={"symbol": "circle" if baseline[v] else "diamond", "size": 9},
                    customdata=ids,
                    hovertemplate=text(v)
                    + "<br>%{customdata}<br>geomean p50: %{y:.4g} ms<extra></extra>",
                ),
                row=r,
                col=1,
            )
        fig.update_yaxes(type="log", title_text="ms", row=r, col=1)
    fig.update_xaxes(type="category", automargin=True)
    fig.update_layout(
        template="plotly_white",
        height=ROW_HEIGHT_PX * len(dtypes),
        **TOP_LEGEND,
    )
    return fig


def _short_label(run: Run) -> str:
    """'11-30 01:41 83a4': the run's creation (month-day hour:minute) and its id's random tail."""
    stamp = created(run)[5:16].replace("T", " ")
    return f"{stamp} {run.run_id.rsplit('-', 1)[-1]}".strip()


def _geomean(t: pd.DataFrame, variant: str, dtype: str, shapes: list[str]) -> float | None:
    vals = []
    for s in shapes:
        key = (variant, dtype, s)
        if key not in t.index:
            return None  # a variant not timed at every common shape has no comparable summary
        vals.append(float(t.loc[key, "device_p50_ms"]))
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None
