"""Findings and next steps as one table, filterable by kernel, dtype and variant (and run, when the
page shows several), with plain HTML select filters and a few lines of offline JavaScript.

`finding_rows` and `verdict_blocks` are the only code of the dashboard that reads profkit.explain's
Finding objects: the table takes plain rows, so a change of the findings API touches this module.
"""

from __future__ import annotations

from collections.abc import Sequence

from profkit.dashboard.html import esc
from profkit.explain import Finding, as_bool
from profkit.explain.phrases import finding_text, first_advice_text
from profkit.store import Run

COLUMNS = (  # (row key, header)
    ("run", "run"),
    ("kernel", "kernel"),
    ("variant", "variant"),
    ("dtype", "dtype"),
    ("shape", "shape"),
    ("gpu", "GPU"),  # only for a run spread over a cluster (its cases carry their GPU)
    ("kind", "kind"),
    ("bottleneck", "bottleneck / verdict"),
    ("finding", "finding"),
    ("next_step", "next step"),
)
FILTERS = ("run", "kernel", "dtype", "variant", "gpu")
ALL = "(all)"  # what a select shows for "no filter"; its value is the empty string


def finding_rows(run: Run, findings: Sequence[Finding]) -> list[dict[str, str]]:
    """One row per finding (per case, and the kernel's verdicts), with the dtype and shape of its
    case from cases.csv. Adapter on profkit.explain's Finding (model.py)."""
    cases = run.cases.drop_duplicates("case", keep="last").set_index("case")
    rows = []
    for f in findings:
        case = cases.loc[f.case] if f.case is not None and f.case in cases.index else None
        rows.append(
            {
                "run": run.run_id,
                "kernel": f.kernel,
                "variant": f.variant or "",
                "dtype": "" if case is None else str(case["dtype"]),
                "shape": "" if case is None else str(case["shape"]),
                "gpu": _gpu(case),
                "kind": str(f.kind),
                "bottleneck": str((f.verdict if f.kind == "verdict" else f.bottleneck) or ""),
                "finding": finding_text(f),
                "next_step": first_advice_text(f) or "",
                "incorrect": "" if case is None or as_bool(case["correct"]) else "1",
            }
        )
    return rows


def _gpu(case) -> str:
    """The GPU a case ran on, where the run records one per case (capture --cluster)."""
    if case is None or "gpu" not in case.index or not isinstance(case["gpu"], str):
        return ""
    return "" if case["gpu"].startswith("none") else case["gpu"]


def verdict_blocks(findings: Sequence[Finding]) -> str:
    """The kernel's verdicts, one block per lab variant, for the top of the run's section."""
    parts = []
    for f in findings:
        if f.kind != "verdict":
            continue
        next_step = first_advice_text(f)
        step = f"<p class='next'>next: {esc(next_step)}</p>" if next_step else ""
        parts.append(
            f"<div class='verdict'><p><strong>{esc(f.subject)}: {esc(f.verdict)}</strong></p>"
            f"<p>{esc(finding_text(f))}</p>{step}</div>"
        )
    return "\n".join(parts)


def findings_table(rows: Sequence[dict[str, str]]) -> str:
    """The filters, a count, and the table; every value escaped (names are data, not markup)."""
    if not rows:
        return "<p class='note'>No findings.</p>"
    # the run filter where the page shows several runs; the GPU where the cases carry theirs
    several = {"run": len({r["run"] for r in rows}) > 1, "gpu": any(r.get("gpu") for r in rows)}
    shown = [k for k in FILTERS if several.get(k, True)]
    selects = []
    for key in shown:
        options = "".join(
            f"<option value='{esc(v)}'>{esc(v)}</option>"
            for v in sorted({r[key] for r in rows if r[key]})
        )
        selects.append(
            f"<label>{esc(key)} <select class='filter' data-key='{esc(key)}'>"
            f"<option value=''>{ALL}</option>{options}</select></label>"
        )
    columns = [(k, h) for k, h in COLUMNS if k not in several or k in shown]
    head = "".join(f"<th>{esc(h)}</th>" for _, h in columns)
    body = []
    for r in rows:
        attrs = " ".join(f"data-{k}='{esc(r[k])}'" for k in shown)
        cls = " class='incorrect'" if r.get("incorrect") else ""
        cells = "".join(f"<td>{esc(r[k])}</td>" for k, _ in columns)
        body.append(f"<tr{cls} {attrs}>{cells}</tr>")
    return (
        f"<div class='filters' id='findings-filters'>{''.join(selects)} "
        f"<span id='findings-count'>{len(rows)} of {len(rows)} findings shown</span></div>\n"
        f"<table class='findings' id='findings'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>\n<script>{FILTER_JS}</script>"
    )


# A row is shown when every select is "(all)" or equals the row's value; dtype and shape of a
# verdict (a whole sweep) are empty, so a dtype filter hides verdicts.
FILTER_JS = """
(function () {
  var selects = document.querySelectorAll('#findings-filters select.filter');
  var rows = document.querySelectorAll('#findings tbody tr');
  var count = document.getElementById('findings-count');
  function apply() {
    var shown = 0;
    rows.forEach(function (tr) {
      var ok = true;
      selects.forEach(function (s) {
        if (s.value !== '' && tr.getAttribute('data-' + s.dataset.key) !== s.value) ok = false;
      });
      tr.hidden = !ok;
      if (ok) shown += 1;
    });
    count.textContent = shown + ' of ' + rows.length + ' findings shown';
  }
  selects.forEach(function (s) { s.addEventListener('change', apply); });
  apply();
})();
"""
