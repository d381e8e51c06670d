"""A tune run's page sections: the path (each configuration's device time in the order measured,
coloured by the cause its step answered) and what the run concluded."""

from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go

from profkit.dashboard.common import BASELINE_COLORS, INCORRECT_COLOR, LAB_COLORS, text
from profkit.dashboard.html import esc, note, plot_div
from profkit.store import Run
from profkit.tune.space import describe

SHIPPED_COLOR = "#000000"


def _order(cases: pd.DataFrame) -> pd.DataFrame:
    cases = cases.copy()
    cases["round"] = pd.to_numeric(cases.get("round"), errors="coerce").fillna(0)
    return cases.sort_values(["round", "variant"], kind="stable").reset_index(drop=True)


def _hover(r: pd.Series, ok: bool) -> str:
    step = str(r.action)
    if step not in ("shipped", "grid"):
        step = f"{step} ({r.answers}): {r.move} from {r.proposed_from}"
    timed = f"{r.us:.2f} us" if ok else "incorrect or untimed"
    where = f"{r.variant} (round {int(r['round'])}): {describe(json.loads(r.params))}"
    return "<br>".join(esc(text(x)) for x in (where, step, timed))


def path_figure(run: Run, record: dict) -> go.Figure:
    """One mark per configuration: x = order measured, y = device p50 (us); colour: the cause its
    step answered (black: shipped); an open mark: incorrect or untimed (plotted at no height)."""
    cases = _order(run.cases)
    cases["us"] = pd.to_numeric(cases.get("device_p50_ms"), errors="coerce") * 1e3
    cases["n"] = range(1, len(cases) + 1)
    palette = [*LAB_COLORS, *BASELINE_COLORS]
    causes = [c for c in dict.fromkeys(cases["answers"].astype(str)) if c != "shipped"]
    colors = {"shipped": SHIPPED_COLOR} | {
        c: palette[i % len(palette)] for i, c in enumerate(causes)
    }
    fig = go.Figure()
    for cause, rows in cases.groupby(cases["answers"].astype(str), sort=False):
        ok = rows["correct"].astype(bool) & rows["us"].notna()
        hover = [_hover(r, bool(ok[i])) for i, r in rows.iterrows()]
        fig.add_trace(
            go.Scatter(
                x=rows["n"].tolist(),
                y=rows["us"].where(ok).tolist(),
                mode="markers",
                name=cause,
                marker={"color": colors.get(cause, INCORRECT_COLOR), "size": 11},
                text=hover,
                hovertemplate="%{text}<extra></extra>",
            )
        )
    winner = record.get("winner")
    won = cases[cases.variant.astype(str) == str(winner)]
    if not won.empty and pd.notna(won.us.iloc[0]):
        fig.add_trace(
            go.Scatter(
                x=won["n"].tolist(),
                y=won["us"].tolist(),
                mode="markers",
                name=f"winner {winner}",
                marker={"symbol": "star-open", "size": 22, "color": "#000000"},
                hoverinfo="skip",
            )
        )
    fig.update_xaxes(
        tickvals=cases["n"].tolist(),
        ticktext=[
            f"{esc(v)}<br>r{int(r)}" for v, r in zip(cases.variant, cases["round"], strict=True)
        ],
    )
    fig.update_layout(
        height=420,
        xaxis_title="configuration (and its round), in the order measured",
        yaxis_title="device time p50 (us)",
        legend_title_text="cause its step answered",
    )
    return fig


def tune_sections(run: Run, prefix: str) -> list[tuple[str, str]]:
    from profkit.tune.loop import tune_record

    record = tune_record(run) or {}
    space = record.get("space", {})
    said = (
        f"{space.get('kernel')} {space.get('variant')}: {record.get('measured')} of a grid of "
        f"{space.get('size')} configurations measured, in {len(record.get('rounds', []))} "
        f"round(s); stopped: {record.get('stop')}."
    )
    body = note(said)
    if record.get("why"):
        body += note(f"Winner {record.get('winner')}: {record['why']}")
    if run.interpret:
        body += note("Interpret run: correctness only, nothing timed.")
    else:
        body += plot_div(path_figure(run, record), f"{prefix}-plot-tune")
    return [("Tune path", body)]
