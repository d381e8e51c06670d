"""profkit explain: findings, bottlenecks and verdicts from a stored run or a report.

One module per concern: model (what is decided, as data), record (a launch's counters as one typed
record), kinds (the kernel kind and its owner, decided once), kernel_family (who wrote a kernel, by
its name), evidence (reading rows, quoting numbers), catalogue (the causes: the counters each
needs, its test, what it refutes, its remedies, the conflicts between steps), roofs (per pipe and
dtype; DRAM, L2, L1), facts (the figures beside the causes), memory (the hierarchy, the copy
roof, coalescing by the model), compute (pipes), shape (grid, waves), stalls, context, and
diagnose (one launch -> bottleneck, unit, causes, steps: bottleneck classifies, story tells a
bottleneck's causes in their order, filters keep the steps that stand), siblings (what a faster
variant does differently, quoted where a step points at it), launches (per-launch
drill-down), ncu_rules (NVIDIA's, judged), history (earlier runs, ruled-out steps), host
(host-bound cases), verdict (device-time statistics), decode_iterations (a decode run's iteration
latencies), hotlines and source_render (source lines), run (a stored run -> a Report), phrases
(words), render and as_json (terminal, markdown, JSON). Pure pandas: no torch, no GPU.
"""

from profkit.explain.bottleneck import classify
from profkit.explain.evidence import as_bool, format_value
from profkit.explain.model import (
    SCHEMA_VERSION,
    Action,
    Advice,
    BaselineComparison,
    Bottleneck,
    Cause,
    Finding,
    FindingKind,
    Launch,
    Reason,
    Report,
    RuleResult,
    Unit,
    Verdict,
    plain,
)
from profkit.explain.run import (
    CaseTables,
    case_finding,
    explain_launches,
    explain_run,
    why_no_counters,
)

plain_value = plain

__all__ = [
    "SCHEMA_VERSION",
    "CaseTables",
    "case_finding",
    "why_no_counters",
    "Action",
    "Bottleneck",
    "Cause",
    "BaselineComparison",
    "Finding",
    "FindingKind",
    "Launch",
    "Reason",
    "Report",
    "RuleResult",
    "Advice",
    "Unit",
    "Verdict",
    "as_bool",
    "classify",
    "explain_launches",
    "explain_run",
    "format_value",
    "plain_value",
]
