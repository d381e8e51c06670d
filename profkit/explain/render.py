"""Findings out: a terminal view that fits the terminal's width, markdown, and JSON.

The default terminal view is a screenful per kernel: each lab variant's verdict, what changed since
the previous run, the few findings that matter (where it loses most, and what the baselines do at
the largest case), the next steps and the steps withheld. --verbose, --case and --variant show every
finding in full, with its launches and NVIDIA's rules (kept, and set aside with the reason).
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable

from rich.console import Console
from rich.text import Text

from profkit.dtypes import DTYPE_ALIASES
from profkit.explain import source_render
from profkit.explain.as_json import report_dict
from profkit.explain.hotlines import SourceLines
from profkit.explain.model import Finding, FindingKind, Report, Unit, Verdict
from profkit.explain.phrases import advice_text, finding_text, reason_text

_VERDICT_STYLE = {
    Verdict.WIN: "bold green",
    Verdict.ACTIVE_TRACK: "bold yellow",
    Verdict.NOT_A_WIN: "bold red",
}
_BOTTLENECK_STYLE = {
    "memory": "cyan",
    "compute": "magenta",
    "latency": "yellow",
    "balanced": "blue",
    "host": "red",
}
# the default view's budget per kernel
MAX_LOSS_LINES = 3
MAX_ADVICE = 3
_RULE_WHY = {
    "tensor_saturated": "the Tensor pipe is saturated ({tensor_pct:.1f}%): more warps cannot help",
    "dram_saturated": "DRAM is saturated ({dram_throughput_pct:.1f}%): more warps cannot help",
    "tail_small": "{waves_per_sm:.2f} waves leave only {tail_idle_pct:.1f}% of slots idle",
    "persistent_kernel": "a persistent kernel runs one block per SM by design",
    "library_kernel": "{family} library code: its launch shape is not the user's to change",
}


def by_kernel(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.kernel, []).append(f)
    return groups


def label(f: Finding) -> str:
    if f.kind == FindingKind.VERDICT:
        return str(f.verdict or "no verdict")
    if f.kind == FindingKind.ITERATIONS:
        return "step latency"
    if f.bottleneck is None:
        return "no bottleneck claim"
    unit = f" ({UNIT_WORDS[str(f.unit)]})" if f.unit and f.unit != Unit.HOST else ""
    return f"{f.bottleneck}-bound{unit}"


UNIT_WORDS = {
    "dram": "DRAM",
    "l2": "L2",
    "l1": "L1/shared",
    "tensor": "Tensor pipe",
    "fma": "FMA pipe",
    "alu": "ALU pipe",
    "xu": "XU pipe",
    "lsu": "LSU pipe",
    "fp64": "FP64 pipe",
    "launch": "launch shape",
    "host": "host",
}


# --- terminal ------------------------------------------------------------------------------------


# a URL of a folder's index page, such as NVIDIA's rule links: the folder's URL serves the same
# page, 10 columns narrower (its longest, the Profiling Guide's, then fits 80 columns indented)
_INDEX_PAGE = re.compile(r"(https?://[^\s()]+/)index\.html(?=[#)\s]|$)")


class _Out:
    """Lines wrapped to the console's width, with a hanging indent. While `blocks` is a list,
    each paragraph is collected there with the current `priority` (0 first) instead of printed,
    so the default view can be fitted to a screen (`_fit`)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.width = max(40, console.width)
        self.blocks: list[tuple[int, list[Text]]] | None = None
        self.priority = 0

    def lines(self, text: str, indent: int = 2, first: str = "") -> list[str]:
        lead = " " * indent
        wrapped = textwrap.wrap(
            _INDEX_PAGE.sub(r"\1", text),
            self.width,
            initial_indent=lead + first,
            subsequent_indent=lead + ("  " if first else ""),
            break_on_hyphens=False,
            break_long_words=False,  # a URL or a kernel name stays whole, on a line of its own
        ) or [lead + first]
        # such a word, too wide for its indent, starts at the margin rather than overflow
        return [line.lstrip() if len(line) > self.width else line for line in wrapped]

    def para(self, text: str, indent: int = 2, first: str = "", style: str = "") -> None:
        self.emit([Text(line, style=style) for line in self.lines(text, indent, first)])

    def head(self, left: str, right: str, style: str) -> None:
        # a long subject (a profile run's kernel group) is cut in the middle to fit the line: its
        # start names the kernel, its end the range and launch count; --case shows it whole
        room = self.console.width - len(right) - 2
        if len(left) > room >= 24:
            tail = (room - 3) // 2
            left = left[: room - 3 - tail] + "..." + left[len(left) - tail :]
        t = Text(left, style="bold")
        t.append("  ")
        t.append(right, style=style)
        self.emit([t])

    def emit(self, texts: list[Text]) -> None:
        if self.blocks is not None:
            self.blocks.append((self.priority, texts))
            return
        for t in texts:
            self.console.print(t, soft_wrap=True)


# The default view fits one screen per kernel (80 x 50 at most): past it, the least important
# paragraphs are left out, then long ones are cut, and a line says how to see them all.
SCREEN_LINES = 50
# the order paragraphs are left out in, last first
_P_HEAD, _P_VERDICT, _P_STEP1, _P_LOSSES, _P_STEPS, _P_HISTORY, _P_WITHHELD, _P_HOST, _P_BASE = (
    range(9)
)
_P_LAUNCHES = 9


def _fit(out: _Out, blocks: list[tuple[int, list[Text]]], budget: int, hint: str) -> None:
    """Print blocks in order within budget lines: drop the lowest-priority paragraphs (the last
    of a priority first), then cut every paragraph to fewer lines, until they fit."""
    total = sum(len(texts) for _, texts in blocks)
    if total <= budget:
        for _, texts in blocks:
            out.emit(texts)
        return
    budget -= 1  # the line that says what was left out
    keep = list(range(len(blocks)))
    for priority in sorted({p for p, _ in blocks if p > _P_STEP1}, reverse=True):
        for i in reversed([i for i in keep if blocks[i][0] == priority]):
            if sum(len(blocks[j][1]) for j in keep) <= budget:
                break
            keep.remove(i)
    cap = max((len(blocks[i][1]) for i in keep), default=1)
    while cap > 1 and sum(min(len(blocks[i][1]), cap) for i in keep) > budget:
        cap -= 1
    shown = 0
    for i in keep:
        texts = blocks[i][1]
        if len(texts) > cap:
            last = texts[cap - 1].plain.rstrip()
            while len(last) + 4 > out.width and " " in last.strip():
                last = last.rsplit(" ", 1)[0]
            texts = [*texts[: cap - 1], Text(last + " ...", "dim")]
        if shown + len(texts) > budget:
            break
        out.emit(texts)
        shown += len(texts)
    left = total - shown
    out.para(f"({left} more lines left out to fit a screen: {hint})", 0, style="dim")


def render_terminal(
    report: Report | Iterable[Finding],
    console: Console,
    *,
    verbose: bool = False,
    case: str | None = None,
    variant: str | None = None,
    hot: SourceLines | None = None,  # hot source lines (profkit.explain.hotlines), when measured
) -> None:
    findings = list(report)
    if not findings:
        console.print("No findings: the run holds no cases.")
        return
    out = _Out(console)
    detail = verbose or case is not None or variant is not None
    notes = report.notes if isinstance(report, Report) else {}
    footer = [] if detail else _footer(findings)
    footer_lines = sum(len(out.lines(text, 0)) for text in footer)
    for kernel, group in by_kernel(findings).items():
        console.rule(Text(kernel, style="bold"), characters="-")
        if detail:
            if notes.get(kernel):
                _note(out, notes[kernel])
            for f in _select(group, case, variant):
                _full(out, f, verbose or case is not None, hot, asked=case is not None)
            continue
        note_lines = 0
        if notes.get(kernel):  # printed whole, before what is fitted to the screen
            note_lines = _note(out, notes[kernel])
        out.blocks, out.priority = [], _P_HEAD
        _summary(out, group, hot)
        blocks, out.blocks = out.blocks, None
        _fit(out, blocks, SCREEN_LINES - 1 - footer_lines - note_lines, _HINT)
    for text in footer:
        out.para(text, 0, style="dim")


def _note(out: _Out, text: str) -> int:
    """A run's note: its first line a paragraph, the lines after it (a table: a profile's time per
    op class) as they are. -> lines printed."""
    head, *rows = text.split("\n")
    out.para(head, 0, first="note: ", style="italic")
    for row in rows:
        out.emit([Text(row, style="italic")])
    return len(out.lines(head, 0, first="note: ")) + len(rows)


_HINT = "--variant NAME or --verbose shows them"
# the words of the default view that need a definition, and it (also in the README's glossary)
GLOSSARY = {
    "ACTIVE TRACK": "ACTIVE TRACK: neither a win (faster than every baseline at every case) nor "
    "beaten everywhere: worth pursuing",
    "withheld": "withheld: a step already tried without effect (an earlier run or the lab "
    "notebook), or one whose gain is under the practical floor, so not advised",
}


def _footer(findings: list[Finding]) -> list[str]:
    if not any(f.kind != FindingKind.LAUNCH for f in findings):
        return []
    said = []
    if any(f.kind == FindingKind.VERDICT and f.verdict == Verdict.ACTIVE_TRACK for f in findings):
        said.append(GLOSSARY["ACTIVE TRACK"])
    if any(f.ruled_out for f in findings):
        said.append(GLOSSARY["withheld"])
    more = (
        "more: --case NAME or --variant NAME for a case's detail, --verbose for every case "
        "with NVIDIA's rules, --format json for the data."
    )
    return [more, *(["words: " + "; ".join(said) + "."] if said else [])]


def select(
    report: Report | Iterable[Finding], case: str | None, variant: str | None
) -> list[Finding]:
    """The findings --case / --variant pick (every finding when neither is given)."""
    return _select(list(report), case, variant)


def _select(group: list[Finding], case: str | None, variant: str | None) -> list[Finding]:
    def keep(f: Finding) -> bool:
        if variant is not None and f.variant != variant:
            return False
        if case is not None:
            # case-insensitive, as --dtype is: "Triton BF16" finds triton.bfloat16
            text = " ".join(x for x in (f.case, f.subject) if x).replace(".", " ").lower()
            wanted = {DTYPE_ALIASES.get(w, w) for w in case.replace(".", " ").lower().split()}
            words = set(text.split())
            return f.kind != FindingKind.VERDICT and wanted <= words
        return True

    return [f for f in group if keep(f)]


def _summary(out: _Out, group: list[Finding], hot: SourceLines | None = None) -> None:
    verdicts = [f for f in group if f.kind == FindingKind.VERDICT]
    cases = [f for f in group if f.kind == FindingKind.CASE]
    _advice(out, group)
    if not verdicts:  # a bare report: one line per launch
        for f in group:
            if f.kind != FindingKind.ITERATIONS:
                _launch_line(out, f)
                _hot_line(out, hot, f)
        return
    for v in verdicts:
        out.priority = _P_HEAD
        out.head(
            f"{v.kernel} {v.variant}",
            str(v.verdict or "no verdict").upper(),
            _VERDICT_STYLE.get(v.verdict, "bold"),
        )
        out.priority = _P_VERDICT
        out.para(finding_text(v))
        history = next(
            (f for f in group if f.kind == FindingKind.HISTORY and f.variant == v.variant), None
        )
        out.priority = _P_HISTORY
        if history is not None:
            out.para(finding_text(history), first="history: ")
        mine = {(f.dtype, f.shape): f for f in cases if f.variant == v.variant}
        out.priority = _P_LOSSES
        _losses(out, v, mine)
        _hot_line(out, hot, _largest(list(mine.values()), hot))
        out.priority = _P_BASE
        _baselines(out, group, v)
        hosted = [f for f in group if f.kind == FindingKind.HOST and f.variant == v.variant]
        out.priority = _P_HOST
        if hosted:
            worst = max(hosted, key=lambda f: f.evidence.get("host_over_device_x") or 0)
            out.para(
                f"{_cases(len(hosted))} host-bound; e.g. {worst.dtype} "
                f"{worst.shape}: {reason_text(worst.reasons[0], worst.evidence)}",
                first="host: ",
            )
        steps = v.next[:MAX_ADVICE]
        if hosted and all(s.action != "cuda_graph" for s in steps):
            steps = [*steps, hosted[0].next[0]][: MAX_ADVICE + 1]
        for i, step in enumerate(steps, 1):
            out.priority = _P_STEP1 if i == 1 else _P_STEPS
            out.para(advice_text(step), first=f"next {i}: ", style="bold" if i == 1 else "")
        withheld = _withheld(group, v.variant)
        out.priority = _P_WITHHELD
        for item in withheld:
            out.para(withheld_text(item), first="withheld: ", style="dim")


def _advice(out: _Out, group: list[Finding]) -> None:
    """Step-latency runs: each variant's distribution and where its tail comes from, then the
    profiled steps (cases with a per-launch drill-down): their reading and largest launches."""
    if not any(f.kind == FindingKind.ITERATIONS for f in group):
        return
    for f in group:
        if f.kind == FindingKind.ITERATIONS:
            out.priority = _P_HEAD
            out.head(f.subject, label(f), "cyan")
            out.priority = _P_VERDICT
            out.para(finding_text(f))
    out.priority = _P_LAUNCHES
    for f in group:
        if f.kind == FindingKind.CASE and f.launches:
            out.head(f.subject, label(f), "cyan")
            out.para(next((t for r in f.reasons if (t := reason_text(r, f.evidence))), ""))
            top = sorted(f.launches, key=lambda x: -(x.share_pct or 0.0))[:_TOP_LAUNCHES]
            out.para(
                "; ".join(
                    f"{x.name} [{x.family}] {x.share_pct or 0:.0f}% ({x.bottleneck or '?'})"
                    for x in top
                )
                + f" (--variant {f.variant} for all {len(f.launches)})",
                first="largest launches: ",
            )


_TOP_LAUNCHES = 3


def _losses(out: _Out, v: Finding, mine: dict) -> None:
    """The places it loses, worst first, each once with the baselines that beat it there."""
    places: dict[tuple[str, str], list] = {}
    for c in sorted((c for c in v.comparisons if c.outcome == "slower"), key=lambda c: -c.ratio):
        places.setdefault((c.dtype, c.shape), []).append(c)
    for (dtype, shape), lost in list(places.items())[:MAX_LOSS_LINES]:
        f = mine.get((dtype, shape))
        if f is not None:
            against = ", ".join(f"{c.baseline} by {c.delta_pct:.1f}%" for c in lost)
            out.para(_one_line(f), first=f"{dtype} {shape} (loses to {against}): ")
    if len(places) > MAX_LOSS_LINES:
        more = len(places) - MAX_LOSS_LINES
        out.para(f"... and {more} more places it loses (--variant {v.variant}).", style="dim")


def _baselines(out: _Out, group: list[Finding], v: Finding) -> None:
    """What the baselines do at the largest case: the fused/unfused picture in a few lines."""
    cases = [f for f in group if f.kind == FindingKind.CASE]
    lab = [f for f in cases if f.variant == v.variant and f.evidence.get("device_p50_ms")]
    if not lab:
        return
    big = max(lab, key=lambda f: f.evidence.get("device_p50_ms") or 0)
    lab_names = {x.variant for x in group if x.kind == FindingKind.VERDICT}
    for f in cases:
        if (f.dtype, f.shape) != (big.dtype, big.shape):
            continue
        if f.variant != v.variant and f.variant in lab_names:
            continue
        first = next(
            (reason_text(r, f.evidence) for r in f.reasons if reason_text(r, f.evidence)), ""
        )
        out.para(f"{label(f)}. {first}", first=f"{f.variant} at {f.dtype} {f.shape}: ")


def _cases(n: int) -> str:
    return "1 of its cases is" if n == 1 else f"{n} of its cases are"


def withheld_text(item: dict) -> str:
    """A withheld step and why: tried without effect, or worth less than the practical floor."""
    action = item["action"].replace("_", " ")
    if item.get("why") == "under_floor" and item.get("gain_us") is not None:
        return (
            f"{action} (at most {item['gain_us']:.2g} us to gain, under the practical floor "
            "of 2% and 1 us)"
        )
    return f"{action} ({item['why']})"


def _withheld(group: list[Finding], variant: str | None) -> list[dict]:
    seen: dict[str, dict] = {}
    for f in group:
        if f.variant == variant and f.kind in (FindingKind.HISTORY, FindingKind.CASE):
            for item in f.ruled_out:
                seen.setdefault(item["action"], item)
    return list(seen.values())


def _one_line(f: Finding) -> str:
    text = next((reason_text(r, f.evidence) for r in f.reasons if reason_text(r, f.evidence)), "")
    return f"{label(f)}. {text}".strip()


def _launch_line(out: _Out, f: Finding) -> None:
    out.head(f.subject, label(f), _BOTTLENECK_STYLE.get(str(f.bottleneck), "dim"))
    out.para(finding_text(f))
    if f.next:
        out.para(advice_text(f.next[0]), first="next: ", style="bold")


def _hot_line(out: _Out, hot: SourceLines | None, f: Finding | None) -> None:
    said = source_render.headline(hot, f, detail=False) if f is not None else None
    if said:
        where = f" at {f.dtype} {f.shape}" if f is not None and f.kind == FindingKind.CASE else ""
        out.para(said, first=f"source{where}: ")


def _largest(cases: list[Finding], hot: SourceLines | None) -> Finding | None:
    """Of a variant's cases with hot lines, the one with the longest device time."""
    have = [f for f in cases if hot is not None and hot.of(f) is not None]
    return max(have, key=lambda f: f.evidence.get("device_p50_ms") or 0.0, default=None)


def _full(
    out: _Out, f: Finding, rules: bool, hot: SourceLines | None = None, asked: bool = False
) -> None:
    style = _VERDICT_STYLE.get(f.verdict) or _BOTTLENECK_STYLE.get(str(f.bottleneck), "dim")
    out.head(f.subject, label(f).upper() if f.kind == FindingKind.VERDICT else label(f), style)
    out.para(finding_text(f))
    for label_, line in facts(f.evidence):
        out.para(line, indent=4, first=f"{label_}: ", style="dim")
    if f.not_measured:  # honest confidence: causes this capture could not judge either way
        missing = ", ".join(c.replace("_", " ") for c in f.not_measured)
        out.para(missing, indent=4, first="not measured: ", style="dim")
    for launch in f.launches:
        share = f"{launch.share_pct:.0f}%" if launch.share_pct is not None else "?"
        dram = launch.evidence.get("dram_throughput_pct")
        sm = launch.evidence.get("sm_throughput_pct")
        bits = f"{launch.bottleneck or '?'}"
        if dram is not None and sm is not None:
            bits += f", DRAM {dram:.0f}%, SM {sm:.0f}%"
        out.para(f"{share:>4} {launch.name} [{launch.family}]: {bits}", indent=4)
    if f.kind in (FindingKind.CASE, FindingKind.LAUNCH):
        said = source_render.headline(hot, f, detail=asked)  # "not measured": --case only
        if said:
            out.para(said, first="source: ")
        if rules and hot is not None:
            source_render.print_lines(out.para, hot.of(f))
    for i, step in enumerate(f.next, 1):
        out.para(advice_text(step), first=f"next {i}: ", style="bold" if i == 1 else "")
    for item in f.ruled_out:
        out.para(withheld_text(item), first="withheld: ", style="dim")
    if rules:
        for r in f.nvidia_rules:
            if r.suppressed:
                why = _rule_why(r.suppressed, r.note)
                out.para(f"[{r.rule}, set aside: {why}] {r.message}", indent=4, style="dim")
            else:
                speedup = f" (est. {r.speedup_pct:.0f}%)" if r.speedup_pct is not None else ""
                out.para(f"[{r.rule}{speedup}] {r.message}", indent=4, style="dim italic")


_PIPE_NAMES = (
    ("tensor_any_pct", "Tensor"),
    ("tensor_pipe_pct", "Tensor (HMMA)"),
    ("fma_pipe_pct", "FMA"),
    ("alu_pipe_pct", "ALU"),
    ("xu_pipe_pct", "XU"),
    ("lsu_pipe_pct", "LSU"),
    ("fp64_pipe_pct", "FP64"),
)
_LEVELS = (
    ("dram_throughput_pct", "DRAM"),
    ("l2_throughput_pct", "L2"),
    ("l1_throughput_pct", "L1"),
    ("l2_hit_pct", "L2 hit"),
    ("l1_hit_pct", "L1 hit"),
)


def facts(ev: dict) -> list[tuple[str, str]]:
    """The detail view's figures, from the evidence: roofs, memory hierarchy, pipes, stalls."""
    out = []
    roof = []
    if ev.get("pct_of_same_size_copy_pct") is not None:
        roof.append(f"{ev['pct_of_same_size_copy_pct']:.1f}% of a same-size copy")
    if ev.get("pct_of_copy_pct") is not None:
        roof.append(f"{ev['pct_of_copy_pct']:.1f}% of the large copy ({ev['copy_gbps']:.0f} GB/s)")
    if ev.get("pct_of_pipe_roof_pct") is not None:
        roof.append(
            f"{ev['achieved_tflops']:.3g} TFLOP/s, {ev['pct_of_pipe_roof_pct']:.1f}% of the "
            f"{ev['roof_pipe']} roof ({ev['pipe_roof_tflops']:.0f} TFLOP/s at "
            f"{ev['roof_clock_mhz']:.0f} MHz)"
        )
    if ev.get("pct_of_measured_matmul_pct") is not None:
        roof.append(f"{ev['pct_of_measured_matmul_pct']:.1f}% of the measured matmul")
    if ev.get("roof_note"):  # no per-SM rate for this pipe on this GPU: measured roofs only
        roof.append(f"compute roof: {ev['roof_note']}")
    if roof:
        out.append(("roofs", "; ".join(roof)))
    memory = [f"{name} {ev[k]:.1f}%" for k, name in _LEVELS if ev.get(k) is not None]
    if ev.get("dram_bytes_read") is not None and ev.get("dram_bytes_write") is not None:
        memory.append(
            f"DRAM read {ev['dram_bytes_read'] / 1e6:.1f} MB, write "
            f"{ev['dram_bytes_write'] / 1e6:.1f} MB"
        )
    if ev.get("sectors_per_request_ratio") is not None:
        memory.append(f"{ev['sectors_per_request_ratio']:.1f} sectors/request")
    if memory:
        out.append(("memory", ", ".join(memory)))
    pipes = [f"{name} {ev[k]:.1f}%" for k, name in _PIPE_NAMES if ev.get(k) is not None]
    if pipes:
        out.append(("pipes", ", ".join(pipes)))
    stalls = sorted(
        ((k[6:-4], v) for k, v in ev.items() if k.startswith("stall_") and k.endswith("_pct")
         and k != "stall_share_pct" and v is not None),
        key=lambda kv: -kv[1],
    )[:3]  # fmt: skip
    if stalls:
        out.append(("stalls", ", ".join(f"{r.replace('_', ' ')} {v:.1f}%" for r, v in stalls)))
    return out


def _rule_why(key: str, note: dict) -> str:
    try:
        return _RULE_WHY[key].format(**note)
    except (KeyError, ValueError, IndexError):
        return key.replace("_", " ")


# --- markdown and JSON ----------------------------------------------------------------------------


def to_markdown(
    report: Report | Iterable[Finding], verbose: bool = False, hot: SourceLines | None = None
) -> str:
    lines: list[str] = []
    notes = report.notes if isinstance(report, Report) else {}
    for kernel, group in by_kernel(report).items():
        lines += [f"### {kernel}", ""]
        if notes.get(kernel):
            head, *rows = notes[kernel].split("\n")
            lines += [f"*Note:* {head}", ""]
            if rows:  # a table (a profile's time per op class): kept as laid out
                lines += ["```", *rows, "```", ""]
        for f in group:
            if f.kind == FindingKind.VERDICT:
                lines += [f"**{f.subject}: {label(f)}.** {finding_text(f)}", ""]
                lines += [f"- *Next:* {advice_text(s)}" for s in f.next]
                lines.append("")
            elif f.kind == FindingKind.HISTORY:
                lines += [f"*History:* {finding_text(f)}", ""]
            elif f.kind == FindingKind.ITERATIONS:
                lines += [f"**{f.subject}: {label(f)}.** {finding_text(f)}", ""]
            elif verbose or f.kind in (FindingKind.HOST, FindingKind.LAUNCH) or f.reasons:
                lines.append(f"- **{f.subject}** ({label(f)}): {finding_text(f)}")
                if f.next:
                    lines.append(f"  - *Next:* {advice_text(f.next[0])}")
                lines += source_render.markdown(hot, f)
                if verbose:
                    lines += [
                        f"  - NVIDIA {r.rule}: {r.message}"
                        + (
                            f" *(set aside: {_rule_why(r.suppressed, r.note)})*"
                            if r.suppressed
                            else ""
                        )
                        for r in f.nvidia_rules
                    ]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def to_json(
    report: Report | Iterable[Finding], hot: SourceLines | None = None, damaged: str | None = None
) -> str:
    """damaged: the mark of a run read damaged (--force), first in the object."""
    if not isinstance(report, Report):
        report = Report(findings=list(report))
    out = {"damaged": damaged, **report_dict(report)} if damaged else report_dict(report)
    if hot is not None and hot.measured:  # one entry per launch with hot lines
        out["source_lines"] = hot.to_list()
    return json.dumps(out, indent=2)
