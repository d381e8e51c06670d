"""One offline HTML page for one or more stored runs: the views, their notes, the findings table.

The same runs always give the same bytes: fixed div ids, figure JSON with sorted keys, no
timestamps. plotly.js is either inlined once or referenced as a shared file beside the page
(`plotly.min.js`, written there too), so a folder of pages carries the 4.6 MB library once and
still opens offline.
"""

from __future__ import annotations

import os
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import plotly.offline

from profkit import stats
from profkit.dashboard import (
    findings_view,
    history,
    host,
    iteration_latency,
    launches,
    roofline,
    source_view,
    speedup,
    sweep,
)
from profkit.dashboard.common import timed
from profkit.dashboard.html import (
    TEMPLATE_VAR,
    esc,
    no_counters,
    note,
    plot_div,
    script_json,
    template,
)
from profkit.errors import ProfkitError
from profkit.explain import Finding
from profkit.explain.decode_iterations import as_timed_frame
from profkit.store import Run

# a run kind's own views (profkit.run_kinds.VIEWS): (run, id prefix) -> (title, html) per view,
# in page order
KindView = Callable[[Run, str], list[tuple[str, str]]]


PLOTLY_ASSET = "plotly.min.js"


# --- sections of one run ---------------------------------------------------------------------


def _header(run: Run) -> str:
    m = run.manifest
    fp, ceil, counters = (m.get(k) or {} for k in ("fingerprint", "ceilings", "counters"))
    items = [
        ("kernel", m.get("kernel")),
        ("GPU", fp.get("gpu")),
        ("created", m.get("created")),
        ("schema", m.get("schema", 1)),
        ("copy ceiling", f"{ceil['copy_gbps']:g} GB/s" if "copy_gbps" in ceil else None),
        ("matmul ceiling", _matmul(ceil)),
        ("counters", counters.get("status", "unknown")),
    ]
    if run.timing_only:
        items += [("why", counters.get("reason")), ("fix", counters.get("fix"))]
    if run.damage:  # read with --force: the page says so first
        said = "read with --force, what survives: " + "; ".join(run.damage)
        items.insert(0, ("DAMAGED RUN", said))
    rows = "".join(
        f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items if v is not None and v != ""
    )
    return f"<dl class='meta'>{rows}</dl>"


def _matmul(ceil: dict) -> str | None:
    if "matmul_tflops" not in ceil:
        return None
    dtype = f" ({ceil['matmul_dtype']})" if ceil.get("matmul_dtype") else ""
    return f"{ceil['matmul_tflops']:g} TFLOP/s{dtype}"


def _speedup_summary(points: Sequence[speedup.Speedup]) -> str:
    """Per lab-baseline pair and dtype: the range of speedups and how many shapes it won."""
    groups: dict[tuple[str, str, str], list[speedup.Speedup]] = {}
    for p in points:
        groups.setdefault((p.lab, p.baseline, p.dtype), []).append(p)
    rows = []
    for (lab, base, dtype), ps in groups.items():
        best = max(ps, key=lambda p: p.speedup)
        rows.append(
            f"<tr><td>{esc(lab)} over {esc(base)}</td><td>{esc(dtype)}</td>"
            f"<td>{min(p.speedup for p in ps):.2f}x .. {best.speedup:.2f}x</td>"
            f"<td>{best.speedup:.2f}x at {esc(best.shape)}</td><td>{_outcomes(ps)}</td></tr>"
        )
    head = "<tr><th>pair</th><th>dtype</th><th>range</th><th>largest</th><th>outcomes</th></tr>"
    return f"<table class='summary'><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def _outcomes(ps: Sequence[speedup.Speedup]) -> str:
    won = sum(p.outcome == "faster" for p in ps)
    lost = sum(p.outcome == "slower" for p in ps)
    return f"{won} faster, {lost} slower, {len(ps) - won - lost} tie/unstable of {len(ps)}"


def _best_peer(
    run: Run, points: Sequence[speedup.Speedup], prefix: str, measure: str, p50: str
) -> str:
    """Each lab variant against its best peer per case (the fastest baseline there), where a run
    has two baselines or more: the figure, and per variant and dtype the outcomes and the
    closest case."""
    if len({p.baseline for p in points}) < 2:
        return ""
    best = speedup.best_peers(list(points))
    groups: dict[tuple[str, str], list[speedup.Speedup]] = {}
    for p in best:
        groups.setdefault((p.lab, p.dtype), []).append(p)
    rows = []
    for (lab, dtype), ps in groups.items():
        closest = min(ps, key=lambda p: p.speedup)
        peers = ", ".join(f"{b} {n}" for b, n in Counter(p.baseline for p in ps).items())
        rows.append(
            f"<tr><td>{esc(lab)}</td><td>{esc(dtype)}</td><td>{esc(peers)}</td>"
            f"<td>{_outcomes(ps)}</td><td>{closest.speedup:.3g}x over {esc(closest.baseline)} at "
            f"{esc(closest.shape)} ({esc(closest.outcome)})</td></tr>"
        )
    head = (
        "<tr><th>lab variant</th><th>dtype</th><th>best peer (cases)</th><th>outcomes</th>"
        "<th>closest case</th></tr>"
    )
    fig = speedup.speedup_figure(run, best, measure, over="its best peer per case")
    return (
        note(
            "Against the best peer per case: at each dtype and shape, the baseline with the "
            f"lowest {p50} there; the colour and the legend name it."
        )
        + f"<table class='summary'><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
        + plot_div(fig, f"{prefix}-plot-best-peer")
    )


def _timing_note(run: Run) -> str:
    """Why a run's timing views are empty, said once above them."""
    if run.interpret:
        return note(
            "Correctness run through Triton's interpreter (no GPU): each variant was checked "
            "against the float64 reference and nothing was timed, so the timing views are empty."
        )
    if timed(run.cases).empty:
        return note("No case of this run has a device time: the timing views are empty.")
    return ""


def _run_sections(
    run: Run, prefix: str, views: Mapping[str, KindView] = MappingProxyType({})
) -> list[tuple[str, str]]:
    """(title, html) per view of one run, in page order: its kind's own views where views has
    them (profkit.run_kinds: a workload profile's kernel groups, a tune's path), else a
    capture's."""
    own = views.get(run.kind)
    if own is not None:
        return own(run, prefix)
    out: list[tuple[str, str]] = []
    step_run = iteration_latency.applies(run)
    # a step-latency run measures no call's device time: its speedups are over step latency
    judged = replace(run, cases=as_timed_frame(run)) if step_run else run
    measure = "step latency" if step_run else "device time"
    p50 = "step p50" if step_run else "device p50"
    points = speedup.speedups(judged)
    fig = speedup.speedup_figure(judged, points, measure)
    if fig is None:
        body = note("No lab variant and baseline were both timed at the same dtype and shape.")
    else:
        body = (
            note(
                f"Speedup = baseline {p50} / lab {p50} (above 1: the lab variant is faster); "
                f"error bars: {speedup.methods_note(points, measure)} A difference is called only "
                f"when the interval excludes 1 and the gap is at least "
                f"{stats.PRACTICAL_FLOOR_PCT:g}% and {stats.PRACTICAL_FLOOR_US:g} us; an interval "
                f"wider than {stats.UNSTABLE_WIDTH:.0%}: unstable. Hollow marks: no difference "
                "called (noise or unstable)."
            )
            + _speedup_summary(points)
            + plot_div(fig, f"{prefix}-plot-speedup")
            + _best_peer(judged, points, prefix, measure, p50)
        )
    out.append(("Speedup over the baselines", body))
    if step_run:
        return out + _step_sections(run, prefix) + _step_run_counters(run, prefix)

    fig, missing = roofline.roofline_figure(run)
    if fig is None:
        body = note("No timed case has a FLOP model: no roofline.")
    else:
        notes = "".join(note(f"Roof not drawn: {m}.") for m in missing)
        body = (
            note(
                "Every timed case is a point: x the spec's FLOPs per byte moved (DRAM bytes "
                "measured by ncu where the run has counters, else the spec's minimum bytes), y "
                "the spec's FLOPs over the device p50. Solid roofs were measured by this run; "
                "dashed ones are derived from the fingerprint (SMs x per-SM rate x max clock): "
                "upper bounds from the datasheet, not measurements."
            )
            + notes
            + plot_div(fig, f"{prefix}-plot-roofline")
        )
    out.append(("Roofline", body))

    out += _step_sections(run, prefix)

    reason = host.missing_reason(run)
    fig = None if reason else host.host_figure(run)
    body = (
        note(f"Not drawn: {reason}.")
        if fig is None
        else note(
            "Host cost (dispatch + launch of one call, back-to-back loop) against device time "
            "(graph replay, L2 flushed). Above the diagonal the host costs more than the GPU."
        )
        + plot_div(fig, f"{prefix}-plot-host")
    )
    out.append(("Device time against host cost", body))

    fig = launches.launches_figure(run)
    body = (
        note("No case launched more than one kernel (or the run has no kernels.csv).")
        if fig is None
        else note(
            "Cases with more than one kernel launch: Nsight Compute's duration of each launch, "
            "stacked in launch order (colour: the kernel), beside the case's device p50 from the "
            "timing pass (|). ncu serialises launches and flushes caches between them, so the "
            "sum can exceed the device time."
        )
        + plot_div(fig, f"{prefix}-plot-launches")
    )
    out.append(("Per-launch drill-down", body))
    if source_view.has_lines(run):
        out.append(
            (
                "Hot source lines",
                note(
                    "Per case, its dominant launch profiled again with ncu's SourceCounters "
                    "(`capture --source`): warp-state samples, instructions, global sectors per "
                    "request against the ideal (wasted) and local-memory (spill) instructions, "
                    f"per line of the kernel's source. {source_view.cost_note(run)}"
                )
                + source_view.source_section(run),
            )
        )

    out.append(
        (
            "Device time per shape",
            note(
                "p50 per case, error bars p5..p95 (log scale). Lab kernels: warm colours, "
                "diamonds, solid bars; baselines: cool colours, circles, hatched bars. A black x "
                "marks a case that failed the reference check: it has no timing."
            )
            + plot_div(sweep.latency_figure(run), f"{prefix}-plot-latency"),
        )
    )
    out.append(
        (
            "Share of the measured copy bandwidth",
            plot_div(sweep.bandwidth_figure(run), f"{prefix}-plot-bandwidth"),
        )
    )
    counters = sweep.counter_figures(run)
    if counters:
        body = note(
            "Nsight Compute, one value per case over all its launches (bytes and kernels summed, "
            "percentages weighted by launch duration). The dashed line is the spec's minimum "
            "bytes: DRAM bytes above it are traffic that fusion could save."
        ) + "".join(plot_div(f, f"{prefix}-plot-counters{i}") for i, f in enumerate(counters))
    else:
        body = no_counters(run)
    out.append(("Hardware counters", body))
    return out


def _step_run_counters(run: Run, prefix: str) -> list[tuple[str, str]]:
    """A step-latency run's counter views: the per-launch drill-down of the profiled steps and
    the counters per case. The device-time views (roofline, host against device, device time per
    shape, copy bandwidth) are left out: they read one call's device time, not measured here."""
    fig = launches.launches_figure(run)
    body = (
        note("No profiled step in this run (no kernels.csv): no per-launch drill-down.")
        if fig is None
        else note(
            "The launches of one step per profiled case (the eager and fused variants, run "
            "by profkit.ncu_program under Nsight Compute): each launch's ncu duration, stacked in "
            "launch order (colour: the kernel). ncu serialises launches and flushes caches "
            "between them; the step latency above also holds the GPU's wait for launches."
        )
        + plot_div(fig, f"{prefix}-plot-launches")
    )
    out = [("Per-launch drill-down", body)]
    counters = sweep.counter_figures(run)
    body = (
        note("Nsight Compute, one value per profiled case over all the launches of its step.")
        + "".join(plot_div(f, f"{prefix}-plot-counters{i}") for i, f in enumerate(counters))
        if counters
        else no_counters(run)
    )
    out.append(("Hardware counters", body))
    return out


def _step_sections(run: Run, prefix: str) -> list[tuple[str, str]]:
    """Runs that time whole steps: the distribution per case, the tail by stage, and dynamic
    replay per bucket; none else."""
    dist = iteration_latency.distribution_figure(run)
    if dist is None:
        return []
    caveat = run.manifest.get("note")
    body = note(
        "Step latency (cases.csv step_p50_ms..step_p99_ms): device events around each step on "
        "its stream, a synchronize after each, so it includes the GPU's wait for the host's "
        "launches; not one call's device time, not host-timed. Per case, from its stored "
        "samples: box p25..p75 with the median, whiskers p5..p99, a bar at p95."
        + (f" This run: {caveat}." if caveat else "")
    ) + plot_div(dist, f"{prefix}-plot-steps")
    out = [("Step latency distribution", body)]
    tail = iteration_latency.tail_figure(run)
    if tail is not None:
        out.append(
            (
                "Where the tail comes from",
                note(
                    "From the probed run (a second run with device events between stages, "
                    "probe.* samples): over the steps at or above the "
                    f"p{iteration_latency.TAIL_PCT} of the "
                    "probed step latency, each stage's mean minus its median over all steps, "
                    "stacked per case."
                )
                + plot_div(tail, f"{prefix}-plot-steptail"),
            )
        )
    buckets = iteration_latency.bucket_figure(run)
    if buckets is not None:
        out.append(
            (
                "Dynamic replay by batch bucket",
                note(
                    "Dynamic replay's step latency per batch bucket, for each dynamically "
                    "replayed variant (its manifest section: each timed step's batch, padded to "
                    "its bucket): p50 per bucket, each bucket's share of all steps and of the "
                    f"steps at or above the p{iteration_latency.TAIL_PCT}, and its mean padding "
                    "waste (padded rows / bucket rows)."
                )
                + plot_div(buckets, f"{prefix}-plot-stepbuckets"),
            )
        )
    return out


# --- history ----------------------------------------------------------------------------------


def _history_section(h: history.History, prefix: str) -> str:
    if not h.runs:
        return note(f"No timed run of {h.kernel} is stored (interpret runs time nothing).")
    if len(h.runs) < 2:
        return note(
            f"One timed run of {h.kernel} stored up to this page's run: nothing to compare yet."
        )
    parts = [
        note(
            f"{len(h.runs)} runs of {h.kernel}, oldest first. Each step compares every case "
            "timed in both runs (later / earlier device p50, 95% interval); only cases beyond "
            f"noise are listed, at most {history.MOVED_SHOWN}: the lab's own cases first, then "
            "baselines (a baseline that moved points at the environment), largest first."
        )
    ]
    fig = history.history_figure(h)
    if fig is not None:
        parts.append(plot_div(fig, f"{prefix}-plot"))
    for change in h.changes:
        counts = ", ".join(f"{n} {o}" for o, n in change.counts.items())
        parts.append(
            f"<h4>{esc(change.before.run_id)} &rarr; {esc(change.after.run_id)}</h4>"
            f"<p>cases, later against earlier: {esc(counts)}</p>"
        )
        if change.differences:
            rows = "".join(
                f"<tr><td>{esc(w)}</td><td>{esc(a)}</td><td>{esc(b)}</td></tr>"
                for w, a, b in change.differences
            )
            parts.append(
                "<table class='summary'><thead><tr><th>changed</th><th>before</th>"
                f"<th>after</th></tr></thead><tbody>{rows}</tbody></table>"
            )
        else:
            parts.append(
                note(
                    "Same environment and options in both manifests: what moved them is the "
                    "code (the manifests do not version the kernel source)."
                )
            )
        if change.moved:
            rows = "".join(
                f"<tr><td>{esc(m['case'])}{'' if m['lab'] else ' (baseline)'}</td>"
                f"<td>{m['before_ms'] * 1e3:.4g}</td><td>{m['after_ms'] * 1e3:.4g}</td>"
                f"<td>{m['ratio']:.3g}x [{m['ci_low']:.3g}, {m['ci_high']:.3g}]</td>"
                f"<td>{esc(m['outcome'])}</td><td>{esc(m['method'])}</td></tr>"
                for m in change.moved[: history.MOVED_SHOWN]
            )
            parts.append(
                "<table class='summary'><thead><tr><th>case</th><th>before (us)</th>"
                "<th>after (us)</th><th>after / before [95% CI]</th><th>outcome</th>"
                f"<th>method</th></tr></thead><tbody>{rows}</tbody></table>"
            )
    return "\n".join(parts)


# --- the page -----------------------------------------------------------------------------------


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222;
  padding: 0 1em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.meta dt { font-weight: 600; }
.verdict { border-left: 4px solid #d62728; padding: .2em 1em; background: #fafafa; }
table.findings, table.summary { border-collapse: collapse; font-size: 0.85em; margin: .5em 0; }
table.findings td, table.findings th, table.summary td, table.summary th {
  border: 1px solid #ddd; padding: .3em .5em; vertical-align: top; text-align: left; }
tr.incorrect { background: #fde8e8; }
.note { color: #555; }
.filters { margin: .5em 0; } .filters label { margin-right: 1em; }
nav a { margin-right: 1em; }
"""


def _slug(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def build_dashboard(
    runs: Sequence[Run],
    findings: Mapping[str, Sequence[Finding]],
    history_runs: Sequence[Run] = (),
    plotlyjs: str = "inline",
    views: Mapping[str, KindView] = MappingProxyType({}),
) -> str:
    """The page for runs (findings by run id): per run its header, verdicts and views (views: a run
    kind's own, profkit.run_kinds.VIEWS); then the history of each kernel shown (over history_runs
    and runs); then the findings table.
    plotlyjs: "inline" (the library in the page) or "shared" (a PLOTLY_ASSET beside the page)."""
    if not runs:
        raise ProfkitError("no runs to show: name a run, or capture one with `profkit capture`")
    if plotlyjs not in ("inline", "shared"):
        raise ValueError(f"plotlyjs must be 'inline' or 'shared', not {plotlyjs!r}")
    several = len(runs) > 1
    nav, body = [], []
    for i, run in enumerate(runs):
        prefix = f"run{i}"
        sections = _run_sections(run, prefix, views)
        verdicts = findings_view.verdict_blocks(findings.get(run.run_id, ()))
        nav.append(f"<a href='#{prefix}'>{esc(run.run_id)}</a>")
        level = 3 if several else 2
        body.append(
            f"<section class='run' id='{prefix}'>"
            f"{'<h2>' + esc(run.run_id) + '</h2>' if several else ''}"
            f"{_header(run)}\n{_timing_note(run)}{verdicts}"
        )
        for title, content in sections:
            body.append(
                f"<h{level} id='{prefix}-{_slug(title)}'>{esc(title)}</h{level}>\n{content}"
            )
        body.append("</section>")
    kernels = list(dict.fromkeys(str(r.manifest.get("kernel")) for r in runs))
    body.append("<h2 id='history'>History</h2>")
    # up to the newest run shown: a page keeps its bytes when later runs are stored
    newest = max(history.created(r) for r in runs)
    earlier = [r for r in history_runs if history.created(r) <= newest]
    for j, kernel in enumerate(kernels):
        h = history.history(kernel, [*earlier, *runs])
        body.append(f"<h3>{esc(kernel)}</h3>\n{_history_section(h, f'history{j}')}")
    rows = [
        row for run in runs for row in findings_view.finding_rows(run, findings.get(run.run_id, ()))
    ]
    body.append("<h2 id='findings-and-next-steps'>Findings and next steps</h2>")
    body.append(findings_view.findings_table(rows))
    nav += ["<a href='#history'>history</a>", "<a href='#findings-and-next-steps'>findings</a>"]
    title = "profkit dashboard: " + ", ".join(r.run_id for r in runs)
    h1 = esc(runs[0].run_id) if not several else esc(f"{len(runs)} runs: {', '.join(kernels)}")
    if plotlyjs == "inline":
        lib = f"<script>{plotly.offline.get_plotlyjs()}</script>"
    else:
        lib = f'<script src="{PLOTLY_ASSET}"></script>'
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{STYLE}</style>
{lib}
<script>var {TEMPLATE_VAR} = {script_json(template())};</script>
</head>
<body>
<h1>{h1}</h1>
<nav>{"".join(nav)}</nav>
{chr(10).join(body)}
</body></html>
"""


def default_path(runs: Sequence[Run]) -> Path:
    """dashboards/RUN_ID.html for one run; dashboards/KERNEL[+KERNEL]-N-runs.html for several."""
    if len(runs) == 1:
        return Path("dashboards") / f"{runs[0].run_id}.html"
    kernels = "+".join(dict.fromkeys(str(r.manifest.get("kernel")) for r in runs))
    return Path("dashboards") / f"{kernels}-{len(runs)}-runs.html"


def _write_atomic(path: Path, content: str) -> None:
    """Write content to path via a temp file and a rename: readers see the old file or the new,
    and a failure leaves no temp file behind."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("x", encoding="utf-8") as out:
            out.write(content)
        os.replace(tmp, path)
    except BaseException as exc:  # interrupted too: never leave the temp file behind
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ProfkitError(
                f"could not write the dashboard to {path}: {exc.strerror or exc}; "
                "pick a writable path with enough free space"
            ) from exc
        raise


def write_page(
    runs: Sequence[Run],
    findings: Mapping[str, Sequence[Finding]],
    path: Path,
    history_runs: Sequence[Run] = (),
    plotlyjs: str = "shared",
    views: Mapping[str, KindView] = MappingProxyType({}),
) -> Path:
    """Build the page, then write it (and, when shared, plotly.js beside it where missing or
    different) atomically: a failed build or write leaves existing files."""
    page = build_dashboard(runs, findings, history_runs, plotlyjs, views)  # before the disk
    path = Path(path)
    if plotlyjs == "shared":
        asset = path.parent / PLOTLY_ASSET
        lib = plotly.offline.get_plotlyjs()
        if not asset.is_file() or asset.read_text(encoding="utf-8") != lib:
            _write_atomic(asset, lib)
    _write_atomic(path, page)
    return path
