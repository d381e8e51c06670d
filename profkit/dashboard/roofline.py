"""Roofline: achieved throughput against arithmetic intensity, one panel per dtype, every case a
point, under the roofs that bound it.

Roofs come from the run's manifest: `ceilings` where the capture measured them (copy_gbps: the DRAM
roof; matmul_tflops for matmul_dtype: that dtype's Tensor Core roof; l2_gbps, fp32_tflops and
matmul_tflops_<dtype> where a capture records them). A roof the run did not measure is derived from
the fingerprint (SM count x the architecture's per-SM rate from profkit.peaks, the table explain
shares, x the maximum SM clock) and labelled "derived": an upper bound from the datasheet, not a
measurement. Besides the dtype's own roofs, a panel draws the roof of any pipe its cases were
measured on (an int8 GEMM labelled float32 runs on IMMA: the INT8 roof). A roof that can be
neither measured nor derived is left out, and the page says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from profkit import peaks
from profkit.dashboard.common import ROW_HEIGHT_PX, Field, column, hover, layout, text, timed
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import roof_pipe
from profkit.store import Run

# how a panel names the Tensor Core roof of its dtype (fp32 inputs: TF32 when allowed); other
# pipes by profkit.peaks.PIPE_NAMES
TENSOR_KIND = {"float16": "FP16", "bfloat16": "BF16", "float32": "TF32"}
MEMORY_COLORS = {"DRAM": "#1f77b4", "L2": "#17becf"}
COMPUTE_COLORS = {"fp32": "#2ca02c", "tensor": "#9467bd"}

TIMING_HOVER: tuple[Field, ...] = (
    ("intensity", "_ai", ".3g", " FLOP/B"),
    ("achieved", "_tflops", ".4g", " TFLOP/s"),
    ("device p50", "device_p50_ms", ".4g", " ms"),
    ("bandwidth", "gbps", ".0f", " GB/s"),
    ("model FLOPs", "flops", ".4s", ""),
    ("model minimum bytes", "bytes", ".4s", "B"),
)
COUNTER_HOVER: tuple[Field, ...] = (
    ("DRAM bytes (ncu)", "dram_bytes", ".4s", "B"),
    ("DRAM throughput", "dram_throughput_pct", ".1f", "%"),
    ("SM throughput", "sm_throughput_pct", ".1f", "%"),
    ("L2 hit rate", "l2_hit_pct", ".1f", "%"),
    ("achieved occupancy", "achieved_occupancy_pct", ".1f", "%"),
    ("Tensor pipe", "tensor_pipe_pct", ".1f", "%"),
    ("kernels", "kernel_count", ".0f", ""),
)


@dataclass(frozen=True)
class Roof:
    name: str  # "DRAM", "L2", "FP32 FMA", "BF16 Tensor Core"
    bound: str  # "memory" (value in GB/s) or "compute" (TFLOP/s)
    value: float
    measured: bool
    source: str  # where the value comes from, for the legend and hover
    tensor: bool = False  # a Tensor Core roof (drawn in the tensor colour)

    @property
    def label(self) -> str:
        unit = "GB/s" if self.bound == "memory" else "TFLOP/s"
        how = "measured" if self.measured else "derived"
        return f"{self.name} {self.value:.4g} {unit} ({how})"


def _number(value: object) -> float | None:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


def _derived(run: Run, pipe: str) -> tuple[float, str] | None:
    """SMs x per-SM FLOP/clk x max SM clock, in TFLOP/s, with how it was derived."""
    fp = run.manifest.get("fingerprint") or {}
    cc, gpu = str(fp.get("compute_capability")), fp.get("gpu")
    found = peaks.rate(cc, pipe, str(gpu) if gpu else None)
    sms = _number(fp.get("sm_count"))
    clock = _number((fp.get("clocks_mhz") or {}).get("max_sm"))
    if not (found and sms and clock):
        return None
    per_sm = found[0]
    how = f"{sms:.0f} SMs x {per_sm} FLOP/clk x {clock:.0f} MHz, from the fingerprint"
    return sms * per_sm * clock * 1e6 / 1e12, how


def _why_not(run: Run, pipe: str) -> str:
    fp = run.manifest.get("fingerprint") or {}
    cc, gpu = fp.get("compute_capability"), fp.get("gpu")
    if peaks.rate(str(cc) if cc else None, pipe, str(gpu) if gpu else None) is None:
        return peaks.missing(str(cc) if cc else None, pipe, str(gpu) if gpu else None)
    return "no SM count or clock in the fingerprint"


def measured_pipes(run: Run, dtype: str) -> list[str]:
    """The peaks pipes dtype's cases ran on (explain's roof_pipe), most cases first;
    none for a run without counters."""
    if run.timing_only:
        return []
    cases = timed(run.cases)
    sub = cases[cases["dtype"].astype(str) == dtype]
    pipes = [roof_pipe(LaunchRecord.of(r), dtype)[0] for r in sub.to_dict("records")]
    counted = pd.Series([k for k in pipes if k]).value_counts()
    return [str(k) for k in counted.index]


def roofs(run: Run, dtype: str) -> tuple[list[Roof], list[str]]:
    """The roofs for dtype's panel and a note for each roof left out."""
    ceil = run.manifest.get("ceilings") or {}
    out: list[Roof] = []
    missing: list[str] = []
    if copy := _number(ceil.get("copy_gbps")):
        out.append(Roof("DRAM", "memory", copy, True, "device-to-device copy, manifest ceilings"))
    else:
        missing.append("DRAM (the run measured no copy ceiling)")
    if l2 := _number(ceil.get("l2_gbps")):
        out.append(Roof("L2", "memory", l2, True, "manifest ceilings"))
    else:
        missing.append("L2 (the run measured no L2 bandwidth, and no datasheet figure is derived)")
    vector = peaks.label_vector_pipe(dtype)
    name = peaks.PIPE_NAMES[vector]
    if vector == "fp32_fma" and (fp32 := _number(ceil.get("fp32_tflops"))):
        out.append(Roof(name, "compute", fp32, True, "manifest ceilings"))
    elif d := _derived(run, vector):
        out.append(Roof(name, "compute", d[0], False, d[1]))
    else:
        missing.append(f"{name} (not measured; {_why_not(run, vector)})")
    label_pipe = peaks.LABEL_TENSOR_PIPE.get(dtype)
    if dtype in TENSOR_KIND:
        tc = f"{TENSOR_KIND[dtype]} Tensor Core"
    else:
        tc = peaks.PIPE_NAMES.get(label_pipe or "", f"{dtype} Tensor Core")
    measured = _number(ceil.get(f"matmul_tflops_{dtype}"))
    if measured is None and str(ceil.get("matmul_dtype")) == dtype:
        measured = _number(ceil.get("matmul_tflops"))
    if measured:
        shape = ceil.get("matmul_shape")
        source = f"cuBLAS {dtype} matmul {shape or ''}"
        out.append(Roof(tc, "compute", measured, True, source, tensor=True))
    elif label_pipe and (d := _derived(run, label_pipe)):
        out.append(Roof(tc, "compute", d[0], False, d[1], tensor=True))
    else:
        why = _why_not(run, label_pipe) if label_pipe else "no Tensor Core pipe for this dtype"
        missing.append(f"{tc} (not measured; {why})")
    # the pipes the cases ran on, where they are not the label's (the roof follows the pipe)
    for pipe in measured_pipes(run, dtype):
        if pipe in (vector, label_pipe):
            continue
        name = peaks.PIPE_NAMES[pipe]
        if d := _derived(run, pipe):
            source = f"the pipe {dtype} cases ran on; {d[1]}"
            out.append(Roof(name, "compute", d[0], False, source, pipe in peaks.TENSOR_PIPES))
        else:
            missing.append(f"{name}, the pipe {dtype} cases ran on ({_why_not(run, pipe)})")
    return out, missing


def points(run: Run) -> pd.DataFrame:
    """Timed cases with a FLOP model: intensity over the DRAM bytes ncu measured where the run has
    them (what the kernel really moved), else over the spec's minimum bytes."""
    cases = timed(run.cases)
    cases = cases[column(cases, "flops").gt(0)].copy()
    # counters.status is authoritative: a failed counter pass leaves no trustworthy columns
    measured = column(cases, "dram_bytes") * (float("nan") if run.timing_only else 1.0)
    moved = measured.where(measured.gt(0), column(cases, "bytes"))
    cases["_ai"] = column(cases, "flops") / moved
    cases["_tflops"] = column(cases, "flops") / (column(cases, "device_p50_ms") * 1e-3) / 1e12
    cases["_bytes_from"] = measured.gt(0).map({True: "DRAM bytes (ncu)", False: "model bytes"})
    return cases[cases["_ai"].gt(0) & cases["_tflops"].gt(0)]


def roofline_figure(run: Run) -> tuple[go.Figure | None, list[str]]:
    """The figure (None when no case has a FLOP model) and the notes on roofs left out."""
    pts = points(run)
    lay = layout(run)
    dtypes = [d for d in lay.dtypes if (pts["dtype"].astype(str) == d).any()]
    if not dtypes:
        return None, []
    fig = make_subplots(
        rows=len(dtypes),
        cols=1,
        subplot_titles=[text(f"{d}: roofline (x: FLOP per byte moved)") for d in dtypes],
        vertical_spacing=0.3 / len(dtypes),
    )
    notes: list[str] = []
    for r, dtype in enumerate(dtypes, start=1):
        sub = pts[pts["dtype"].astype(str) == dtype]
        panel_roofs, missing = roofs(run, dtype)
        notes += missing
        lo = float(sub["_ai"].min()) / 3
        hi = max([float(sub["_ai"].max()) * 3] + [_ridge(panel_roofs, c) * 3 for c in panel_roofs])
        for roof in panel_roofs:
            fig.add_trace(_roof_trace(roof, panel_roofs, lo, hi), row=r, col=1)
        for v in lay.variants:
            rows = sub[sub["variant"].astype(str) == v.name]
            if rows.empty:
                continue
            fields = TIMING_HOVER + (() if run.timing_only else COUNTER_HOVER)
            data, template = hover(rows, fields)
            for point, src in zip(data, rows["_bytes_from"].tolist(), strict=True):
                point.append(src)
            fig.add_trace(
                go.Scatter(
                    x=rows["_ai"].tolist(),
                    y=rows["_tflops"].tolist(),
                    mode="markers",
                    name=v.label,
                    legendgroup=v.name,
                    marker=v.marker(),
                    customdata=data,
                    hovertemplate=template.replace(
                        " FLOP/B<br>", f" FLOP/B (over %{{customdata[{len(fields) + 1}]}})<br>"
                    ),
                ),
                row=r,
                col=1,
            )
        fig.update_xaxes(type="log", title_text="arithmetic intensity (FLOP/byte)", row=r, col=1)
        fig.update_yaxes(type="log", title_text="TFLOP/s", row=r, col=1)
    fig.update_layout(
        template="plotly_white",
        height=ROW_HEIGHT_PX * 1.3 * len(dtypes),
        margin={"t": 60, "b": 40},
        legend={"orientation": "v", "x": 1.02, "y": 1},
    )
    seen: set[str] = set()
    for trace in fig.data:
        trace.showlegend = trace.legendgroup not in seen
        seen.add(trace.legendgroup)
    return fig, list(dict.fromkeys(notes))


def _ridge(all_roofs: list[Roof], roof: Roof) -> float:
    """Where a compute roof meets the lowest memory roof (FLOP/byte)."""
    memory = [m.value for m in all_roofs if m.bound == "memory"]
    if roof.bound != "compute" or not memory:
        return 0.0
    return roof.value * 1e3 / min(memory)


def _roof_trace(roof: Roof, all_roofs: list[Roof], lo: float, hi: float) -> go.Scatter:
    """A memory roof is the line bandwidth x intensity up to the highest compute roof; a compute
    roof is flat from where the lowest memory roof meets it (from the left edge without one)."""
    top = max([r.value for r in all_roofs if r.bound == "compute"], default=None)
    if roof.bound == "memory":
        gbs = roof.value
        x_end = hi if top is None else min(hi, top * 1e3 / gbs)
        xs, ys = [lo, x_end], [lo * gbs / 1e3, x_end * gbs / 1e3]
        color = MEMORY_COLORS.get(roof.name, "#1f77b4")
    else:
        start = _ridge(all_roofs, roof) or lo
        xs, ys = [max(lo, start), hi], [roof.value, roof.value]
        color = COMPUTE_COLORS["tensor" if roof.tensor else "fp32"]
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        name=text(roof.label),
        legendgroup=f"roof\x1f{roof.label}",
        line={"color": color, "width": 2, "dash": "solid" if roof.measured else "dash"},
        hovertemplate=f"{text(roof.label)}<br>{text(roof.source)}<extra></extra>",
    )
