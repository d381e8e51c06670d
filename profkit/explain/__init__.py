"""profkit explain: findings, bottlenecks and verdicts from a stored run or a report.

One module per concern: model (what is decided, as data), evidence (reading rows, quoting numbers),
library (who wrote a kernel), roofs (per pipe and dtype; DRAM, L2, L1), memory (the hierarchy,
re-reads, coalescing, bank conflicts), compute (pipes), shape (grid, waves, occupancy), stalls,
diagnose (one row -> bottleneck, unit, causes, steps), launches (per-launch drill-down), rules
(NVIDIA's, judged), history (earlier runs, ruled-out steps), host (host-bound cases), verdict
(device-time statistics), phrases (words) and render (terminal, markdown, JSON). Pure pandas: no
torch, no GPU.
"""

from profkit.explain.diagnose import classify
from profkit.explain.evidence import as_bool, format_value
from profkit.explain.model import (
    SCHEMA_VERSION,
    Action,
    BaselineComparison,
    Bottleneck,
    Cause,
    Finding,
    Kind,
    Launch,
    NextStep,
    Reason,
    Report,
    RuleResult,
    Unit,
    Verdict,
    plain,
)
from profkit.explain.run import explain_launches, explain_run

plain_value = plain

__all__ = [
    "SCHEMA_VERSION",
    "Action",
    "Bottleneck",
    "Cause",
    "BaselineComparison",
    "Finding",
    "Kind",
    "Launch",
    "Reason",
    "Report",
    "RuleResult",
    "NextStep",
    "Unit",
    "Verdict",
    "as_bool",
    "classify",
    "explain_launches",
    "explain_run",
    "format_value",
    "plain_value",
]
