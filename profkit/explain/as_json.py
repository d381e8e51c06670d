"""A report as JSON (docs/explain-schema.md): the model's data, with the words phrases gives each
finding, cause and next step. Here, not in the model, so that the model imports no renderer."""

from __future__ import annotations

from enum import StrEnum

from profkit.explain.model import (
    SCHEMA_VERSION,
    Advice,
    Finding,
    FindingKind,
    Launch,
    Reason,
    Report,
    plain,
)
from profkit.explain.phrases import advice_text, finding_text, reason_text


def report_dict(report: Report) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "source": report.source,
        "mode": report.mode,
        "notes": dict(report.notes),
        "findings": [finding_dict(f) for f in report],
    }


def finding_dict(f: Finding) -> dict:
    out = {
        "subject": f.subject,
        "kind": str(f.kind),
        "kernel": f.kernel,
        "variant": f.variant,
        "case": f.case,
        "dtype": f.dtype,
        "shape": f.shape,
        "bottleneck": _value(f.bottleneck),
        "unit": _value(f.unit),
        "verdict": _value(f.verdict),
        "reasons": [reason_dict(r, f.evidence) for r in f.reasons],
        "evidence": {k: plain(v) for k, v in f.evidence.items()},
        "next": [next_step_dict(s) for s in f.next],
        "text": finding_text(f),
        "nvidia_rules": [r.to_dict() for r in f.nvidia_rules],
        "ruled_out": list(f.ruled_out),
        "not_measured": list(f.not_measured),
    }
    if f.launches:
        out["launches"] = [launch_dict(launch) for launch in f.launches]
    if f.kind == FindingKind.VERDICT:
        out["comparisons"] = [c.to_dict() for c in f.comparisons]
        out["tally"] = f.tally
    return out


def launch_dict(launch: Launch) -> dict:
    return {
        "launch": launch.launch,
        "name": launch.name,
        "family": launch.family,
        "case": launch.case,
        "share_pct": plain(launch.share_pct),
        "bottleneck": _value(launch.bottleneck),
        "unit": _value(launch.unit),
        "evidence": {k: plain(v) for k, v in launch.evidence.items()},
        "reasons": [reason_dict(r, launch.evidence) for r in launch.reasons],
    }


def reason_dict(reason: Reason, evidence: dict) -> dict:
    return {
        "cause": str(reason.cause),
        "evidence": list(reason.keys),
        "detail": {k: plain(v) for k, v in reason.detail.items()},
        "text": reason_text(reason, evidence),
    }


def next_step_dict(step: Advice) -> dict:
    return {
        "action": str(step.action),
        "because": list(step.because),
        "detail": {k: plain(v) for k, v in step.detail.items()},
        "text": advice_text(step),
    }


def _value(value: StrEnum | None) -> str | None:
    return None if value is None else str(value)
