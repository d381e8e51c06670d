"""Step-latency runs (decode, issue 11): each case's latency distribution and where its tail goes.

Drawn only for runs whose cases carry the step-latency columns (profkit.explain.decode_iterations)
and whose samples hold them: the distribution from the `device` samples (a box per case:
p25..p75, the median, whiskers p5..p99, a mark at p95), and from the probed run (`probe.device`,
`probe.<stage>`) each stage's mean over the p95 tail steps minus its median
(profkit.stats.tail.attribute_tail), stacked per case. Every figure is computed from
the stored samples, in the samples' order: deterministic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from profkit.dashboard.common import layout
from profkit.stats.tail import TAIL_PCT, attribute_tail, tail_by
from profkit.store import DECODE, Run

BOX_PCTS = (5, 25, 50, 75, 95, 99)
PROBE = "probe."
STAGE_COLORS = (
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
    "#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b",
)  # fmt: skip


def applies(run: Run) -> bool:
    s = run.samples
    return run.kind == DECODE and s is not None and bool((s["kind"] == "device").any())


def _cases(run: Run) -> list[tuple[str, str, str]]:
    """(case, variant, shape) with device samples, variants in the run's order, then shapes."""
    lay = layout(run)
    order = {v.name: i for i, v in enumerate(lay.variants)}
    shapes = {s: i for i, s in enumerate(lay.shapes)}
    have = set(run.samples.loc[run.samples["kind"] == "device", "case"].astype(str))
    rows = [
        (str(r["case"]), str(r["variant"]), str(r["shape"]))
        for r in run.cases.to_dict("records")
        if str(r["case"]) in have
    ]
    return sorted(rows, key=lambda c: (order.get(c[1], 99), shapes.get(c[2], 99), c[2]))


def distribution(run: Run) -> pd.DataFrame:
    """Per case: variant, shape, n and the percentiles of its device (step-latency) samples, ms."""
    s = run.samples
    dev = s[s["kind"] == "device"]
    out = []
    for case, variant, shape in _cases(run):
        x = dev.loc[dev["case"].astype(str) == case, "ms"].to_numpy(dtype=float)
        p = np.percentile(x, BOX_PCTS)
        out.append(
            {"case": case, "variant": variant, "shape": shape, "n": int(x.size)}
            | {f"p{q}": float(v) for q, v in zip(BOX_PCTS, p, strict=True)}
        )
    return pd.DataFrame(out)


def tail_by_stage(run: Run) -> pd.DataFrame:
    """Per probed case and stage: the stage's mean over the p95 tail steps minus its median, ms.
    Stages in the order the samples list them; cases without probes are absent."""
    s = run.samples
    probes = s[s["kind"].astype(str).str.startswith(PROBE)]
    out = []
    for case, variant, shape in _cases(run):
        mine = probes[probes["case"].astype(str) == case]
        if mine.empty:
            continue
        kinds = list(dict.fromkeys(mine["kind"].astype(str)))
        series = {k[len(PROBE) :]: mine.loc[mine["kind"] == k, "ms"].to_numpy(float) for k in kinds}
        device = series.pop("device", None)
        if device is None or not series:
            continue
        excess = dict(attribute_tail(device, series, TAIL_PCT))
        for stage in series:
            out.append(
                {"case": case, "variant": variant, "shape": shape, "stage": stage}
                | {"excess_ms": excess[stage]}
            )
    return pd.DataFrame(out)


def _label(variant: str, shape: str) -> str:
    return f"{variant} {shape}"


def distribution_figure(run: Run) -> go.Figure | None:
    if not applies(run):
        return None
    d = distribution(run)
    lay = layout(run)
    fig = go.Figure()
    for v in lay.variants:
        sub = d[d["variant"] == v.name]
        if sub.empty:
            continue
        x = sub["shape"].tolist()
        fig.add_trace(
            go.Box(
                x=x,
                q1=sub["p25"].tolist(),
                median=sub["p50"].tolist(),
                q3=sub["p75"].tolist(),
                lowerfence=sub["p5"].tolist(),
                upperfence=sub["p99"].tolist(),
                name=v.label,
                legendgroup=v.name,
                offsetgroup=v.name,
                marker={"color": v.color},
                line={"color": v.color},
                hoverinfo="x+y+name",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=sub["p95"].tolist(),
                mode="markers",
                name=f"{v.label} p95",
                legendgroup=v.name,
                offsetgroup=v.name,
                showlegend=False,
                marker={"symbol": "line-ew-open", "size": 14, "color": v.color},
                customdata=np.stack(
                    [sub["p95"] / sub["p50"], sub["p99"], sub["n"]], axis=-1
                ).tolist(),
                hovertemplate=(
                    "%{x}<br>p95 %{y:.4g} ms<br>p95/p50 %{customdata[0]:.3f}<br>"
                    "p99 %{customdata[1]:.4g} ms<br>%{customdata[2]:.0f} steps"
                    f"<extra>{v.label}</extra>"
                ),
            )
        )
    fig.update_yaxes(type="log", title_text="step latency (ms)")
    fig.update_xaxes(title_text="shape (batch x cache length)", categoryorder="array",
                     categoryarray=lay.shapes)  # fmt: skip
    fig.update_layout(
        template="plotly_white", height=440, margin={"t": 30, "b": 40}, boxmode="group"
    )
    return fig


def tail_figure(run: Run) -> go.Figure | None:
    if not applies(run):
        return None
    t = tail_by_stage(run)
    if t.empty:
        return None
    labels = list(
        dict.fromkeys(_label(v, s) for v, s in zip(t["variant"], t["shape"], strict=True))
    )
    fig = go.Figure()
    for i, stage in enumerate(dict.fromkeys(t["stage"])):
        sub = t[t["stage"] == stage]
        fig.add_trace(
            go.Bar(
                x=[_label(v, s) for v, s in zip(sub["variant"], sub["shape"], strict=True)],
                y=(sub["excess_ms"] * 1e3).tolist(),
                name=stage,
                marker={"color": STAGE_COLORS[i % len(STAGE_COLORS)]},
                hovertemplate=f"%{{x}}<br>{stage}: %{{y:+.1f}} us<extra></extra>",
            )
        )
    fig.update_xaxes(categoryorder="array", categoryarray=labels, tickangle=-45)
    fig.update_yaxes(title_text="tail steps' mean over the median (us)")
    fig.update_layout(template="plotly_white", height=460, margin={"t": 30, "b": 120},
                      barmode="relative")  # fmt: skip
    return fig


def dynamic_variants(run: Run) -> list[str]:
    """The variants replayed dynamically, in the run's order: those with a manifest section of
    their own name that holds the timed steps' batches (the bench writes `dynamic`,
    `dynamic_fused`)."""
    names = dict.fromkeys(run.cases["variant"].astype(str))
    return [
        v for v in names if isinstance(run.manifest.get(v), dict) and run.manifest[v].get("batches")
    ]


def by_bucket(run: Run, variant: str = "dynamic") -> pd.DataFrame:
    """One dynamic variant's replay per batch bucket, from its stored `device` samples (step
    order) and its manifest section (each timed step's batch, the buckets): step share, tail
    share, p50 and p95 of step latency (ms), mean padding waste (padded rows / bucket rows).
    Empty when the run has no such case or the counts disagree."""
    dyn = run.manifest.get(variant) or {}
    batches, buckets = dyn.get("batches") or [], sorted(dyn.get("buckets") or [])
    cases = run.cases[run.cases["variant"].astype(str) == variant]
    if not batches or not buckets or cases.empty or run.samples is None:
        return pd.DataFrame()
    s = run.samples
    sel = (s["case"].astype(str) == str(cases.iloc[0]["case"])) & (s["kind"] == "device")
    x = s.loc[sel, "ms"].to_numpy(float)
    if x.size != len(batches) or max(batches) > buckets[-1]:
        return pd.DataFrame()
    bucket = np.array([next(b for b in buckets if b >= n) for n in batches])
    waste = (bucket - np.asarray(batches)) / bucket
    out = tail_by(x, bucket, TAIL_PCT)
    out["p95_ms"] = [float(np.percentile(x[bucket == b], 95)) for b in out["label"]]
    out["pad_waste"] = [float(waste[bucket == b].mean()) for b in out["label"]]
    return out


def bucket_figure(run: Run) -> go.Figure | None:
    """Every dynamic variant side by side: a bar per variant and bucket (p50, whisker to p95) and
    each variant's tail share; the step share and padding waste once when the variants replayed
    the same batches (as the bench does), else per variant."""
    if not applies(run):
        return None
    tables = {v: by_bucket(run, v) for v in dynamic_variants(run)}
    tables = {v: b for v, b in tables.items() if not b.empty}
    if not tables:
        return None
    batches = {tuple(run.manifest[v]["batches"]) for v in tables}
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for i, (variant, b) in enumerate(tables.items()):
        x = [str(v) for v in b["label"]]
        fig.add_trace(
            go.Bar(
                x=x,
                y=(b["p50_ms"] * 1e3).tolist(),
                name=f"{variant}: step latency p50 (us)",
                marker={"color": STAGE_COLORS[(4 * i) % len(STAGE_COLORS)]},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": ((b["p95_ms"] - b["p50_ms"]) * 1e3).tolist(),
                    "arrayminus": [0.0] * len(b),
                },
                customdata=np.stack(
                    [b["p95_ms"] * 1e3, b["step_share"] * 100, b["tail_share"] * 100], axis=-1
                ).tolist(),
                hovertemplate=(
                    f"{variant}, bucket %{{x}}<br>p50 %{{y:.1f}} us, p95 %{{customdata[0]:.1f}} "
                    "us<br>%{customdata[1]:.1f}% of steps, %{customdata[2]:.1f}% of tail steps"
                    "<extra></extra>"
                ),
            ),
            secondary_y=False,
        )
        lines = [("tail_share", f"share of steps >= p{TAIL_PCT} (%)", 3)]
        if i == 0 or len(batches) > 1:
            lines += [
                ("step_share", "share of steps (%)", 2),
                ("pad_waste", "padding waste (%)", 1),
            ]
        for col, what, color in lines:
            name = what if len(batches) == 1 and col != "tail_share" else f"{variant}: {what}"
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=(b[col] * 100).tolist(),
                    mode="lines+markers",
                    name=name,
                    marker={"color": STAGE_COLORS[(color + 4 * i) % len(STAGE_COLORS)]},
                    line={"dash": "dot" if i else "solid"},
                    hovertemplate=f"bucket %{{x}}<br>{name}: %{{y:.1f}}<extra></extra>",
                ),
                secondary_y=True,
            )
    fig.update_xaxes(title_text="batch bucket (rows per captured graph)", type="category")
    fig.update_yaxes(title_text="step latency (us), bar p50, whisker p95", secondary_y=False)
    fig.update_yaxes(title_text="percent", range=[0, 100], dtick=20, tickmode="linear",
                     showgrid=False, secondary_y=True)  # fmt: skip
    fig.update_layout(template="plotly_white", height=420, margin={"t": 30, "b": 40},
                      barmode="group")  # fmt: skip
    return fig
