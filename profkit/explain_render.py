"""Findings out: a terminal view (rich), markdown that fits a PR description, and JSON.

Each view groups findings by kernel, verdicts first, and quotes a finding's text as written: the
numbers were formatted once, from the evidence, in `profkit.explain`.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.text import Text

from profkit.explain import Finding

_KIND_ORDER = {"verdict": 0, "case": 1, "launch": 2}
_VERDICT_STYLE = {"win": "bold green", "active track": "bold yellow", "not a win": "bold red"}
_BOTTLENECK_STYLE = {
    "memory": "cyan",
    "compute": "magenta",
    "latency": "yellow",
    "balanced": "blue",
}


def by_kernel(findings: list[Finding]) -> dict[str, list[Finding]]:
    """Kernels in first-seen order; within each, verdicts, then cases, then launches."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.kernel, []).append(finding)
    return {k: sorted(v, key=lambda f: _KIND_ORDER.get(f.kind, 3)) for k, v in groups.items()}


def _label(finding: Finding) -> str:
    if finding.kind == "verdict":
        return finding.verdict or "no verdict"
    return f"{finding.bottleneck}-bound" if finding.bottleneck else "no bottleneck claim"


def render_terminal(findings: list[Finding], console: Console) -> None:
    if not findings:
        console.print("No findings: the run holds no cases.")
        return
    for kernel, group in by_kernel(findings).items():
        console.rule(Text(kernel, style="bold"))
        for finding in group:
            console.print(_terminal_block(finding))


def _terminal_block(finding: Finding) -> Text:
    # Text objects, never markup strings: kernel names and NVIDIA messages may hold "[...]"
    style = _VERDICT_STYLE.get(finding.verdict or "") or _BOTTLENECK_STYLE.get(
        finding.bottleneck or "", "dim"
    )
    block = Text()
    block.append(finding.subject, style="bold")
    block.append("  ")
    block.append(_label(finding).upper() if finding.kind == "verdict" else _label(finding), style)
    block.append("\n" + finding.text)
    if finding.next_step:
        block.append("\nnext: ", style="bold")
        block.append(finding.next_step)
    for message in finding.nvidia_rules:
        block.append(f"\nNVIDIA {message}", style="dim italic")
    block.append("\n")
    return block


def to_markdown(findings: list[Finding]) -> str:
    lines: list[str] = []
    for kernel, group in by_kernel(findings).items():
        lines += [f"### {kernel}", ""]
        for finding in group:
            lines += _markdown_block(finding)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _markdown_block(finding: Finding) -> list[str]:
    if finding.kind == "verdict":
        lines = [f"**{finding.subject}: {_label(finding)}.** {finding.text}", ""]
        if finding.next_step:
            lines += [f"*Next:* {finding.next_step}", ""]
        return lines
    lines = [f"- **{finding.subject}** ({_label(finding)}): {finding.text}"]
    if finding.next_step:
        lines.append(f"  - *Next:* {finding.next_step}")
    return lines + [f"  - NVIDIA {message}" for message in finding.nvidia_rules]


def to_json(findings: list[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], indent=2)
