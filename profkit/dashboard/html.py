"""The page's HTML pieces that every view shares: escaping, JSON inside a script, a figure as a
div and the script that draws it, and the notes a section shows in place of a figure."""

from __future__ import annotations

import html
import json
from functools import cache

import plotly.graph_objects as go
import plotly.io as pio

from profkit.store import Run

PLOT_CONFIG = {"displaylogo": False, "responsive": True}
TEMPLATE = "plotly_white"  # every view's theme (common.py and the views set it)
TEMPLATE_VAR = "PROFKIT_TEMPLATE"
# JSON inside <script>: these characters could end the script or open markup, so they are written
# as JSON escapes (same value once parsed)
_SCRIPT_SAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028"}


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def script_json(value: object) -> str:
    out = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    for char, escaped in _SCRIPT_SAFE.items():
        out = out.replace(char, escaped)
    return out


@cache
def template() -> dict:
    """Every figure's theme (plotly_white) as plotly writes it: sent once per page, not per plot."""
    return json.loads(pio.to_json(go.Figure(layout={"template": TEMPLATE})))["layout"]["template"]


def plot_div(fig: go.Figure, div_id: str) -> str:
    """A figure as a div with a fixed id and the script that draws it (plotly.js and the page's
    TEMPLATE_JS loaded first)."""
    spec = json.loads(pio.to_json(fig, validate=False))  # plotly's encoder: NaN -> null
    layout = spec.get("layout", {})
    if layout.get("template") == template():
        layout = {k: v for k, v in layout.items() if k != "template"}
        layout_js = f"Object.assign({{template:{TEMPLATE_VAR}}},{script_json(layout)})"
    else:
        layout_js = script_json(layout)
    height = int(fig.layout.height or 450)
    return (
        f'<div id="{div_id}" class="plotly-graph-div" style="height:{height}px;width:100%"></div>'
        f"<script>Plotly.newPlot({script_json(div_id)},{script_json(spec.get('data', []))},"
        f"{layout_js},{script_json(PLOT_CONFIG)});</script>"
    )


def note(text: str) -> str:
    return f"<p class='note'>{esc(text)}</p>"


def no_counters(run: Run) -> str:
    counters = run.manifest.get("counters") or {}
    if run.timing_only:
        why = counters.get("reason") or f"counters status: {counters.get('status', 'unknown')}"
    else:  # the pass ran, but none of the plotted metrics came back (see metrics_na)
        why = "cases.csv holds none of the counter columns plotted here"
    return note(f"No hardware counters in this run: {why}")
