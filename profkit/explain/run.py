"""Explain a stored run or a bare report: the orchestration of the other modules.

explain_run: per kernel, history first (which steps are ruled out), then one finding per case
(with its launches and NVIDIA's rules judged), host-bound findings, and one verdict per lab
variant. explain_launches: one finding per launch of a .ncu-rep report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pandas as pd

from profkit import thresholds as th
from profkit.explain import catalogue, decode_iterations, history, host, launches, ncu_rules
from profkit.explain.context import Context
from profkit.explain.diagnose import diagnose
from profkit.explain.evidence import (
    Evidence,
    as_bool,
    num,
    step_timed,
    text,
    timed,
    where,
)
from profkit.explain.filters import fit_advice
from profkit.explain.kernel_family import Family, family
from profkit.explain.kinds import KernelKind, Owner, operand_dtype, owner
from profkit.explain.model import (
    Action,
    Advice,
    Cause,
    Finding,
    FindingKind,
    Reason,
    Report,
)
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import Device, device_of_row, memory_roof
from profkit.explain.siblings import Siblings, quote
from profkit.explain.verdict import verdicts
from profkit.lab import lab_dir
from profkit.store import DECODE, Run

_TIMING = ("device_p50_ms", "device_iqr_ms", "device_p95_ms", "pct_peak_bw", "step_p50_ms")


def explain_run(
    run: Run, history_runs: Sequence[Run] | None = None, loaded: Sequence[Run] = ()
) -> Report:
    """history_runs: the earlier runs to compare with (default: those stored beside run, of
    which any in loaded are not read again)."""
    mode = str(run.manifest.get("mode") or ("interpret" if _interpreted(run) else "gpu"))
    report = Report(source=run.run_id, mode=mode)
    device = Device.of(run.manifest)
    no_counters = why_no_counters(run)
    cases = run.cases.astype({"dtype": str, "shape": str, "variant": str, "kernel": str})
    earlier = history.history_runs(run, history_runs, loaded)
    notebook_dir = _notebook_dir()
    tables = CaseTables(launches.by_case(run.kernels), ncu_rules.by_launch(run.rules))
    for kernel, group in cases.groupby("kernel", sort=False):
        rows = group.to_dict("records")
        notebook = history.notebook_ruled_out(str(kernel), notebook_dir)
        ruled: dict[str, dict[Action, str]] = {}
        for variant in history.lab_variants(group):
            found = _history(run, earlier, variant)
            if found[0] is not None:
                report.findings.append(found[0])
            ruled[variant] = history.merge(
                notebook.get("*", {}), notebook.get(variant, {}), found[1]
            )
        floors = _read_floors(rows)
        # every case wrong, the baselines' too: the reference is the suspect (the verdict says why)
        suspect = any(as_bool(r.get("baseline")) for r in rows) and not any(
            as_bool(r.get("correct")) for r in rows
        )
        steps: dict[tuple[str, str], list[Advice]] = {}
        for row in rows:
            variant = str(row["variant"])
            others = [r for r in rows if where(r) == where(row) and str(r["variant"]) != variant]
            ctx = Context(
                device=device,
                dtype=str(row["dtype"]),
                read_floor=floors.get(where(row)),
                ruled_out=ruled.get(variant, {}),
                siblings=Siblings(row, others, run.samples),
            )
            if mode == "interpret" and as_bool(row.get("correct")):
                continue  # a correctness run: nothing to say per correct case
            finding = case_finding(row, ctx, tables, no_counters)
            if suspect:
                finding.next = [_suspect_reference(step) for step in finding.next]
            steps[(variant, where(row))] = finding.next
            report.findings.append(finding)
            hosted = host.host_finding(row, finding.subject)
            if hosted is not None:
                report.findings.append(hosted)
        if run.kind == DECODE:
            # the same comparison against the baseline, on step latency (its samples are the
            # run's `device` kind); the verdict says which measure it weighed
            judged = verdicts(
                str(kernel),
                decode_iterations.as_timed(rows),
                steps,
                run.samples,
                mode,
                on_device=False,
            )
            for v in judged:
                v.evidence["measure"] = "step latency"
            report.verdicts += judged
            report.findings += decode_iterations.iteration_findings(
                str(kernel), rows, run.manifest, run.samples
            )
            note = decode_iterations.kernel_note(run.manifest)
            if note:
                report.notes[str(kernel)] = note
        else:
            report.verdicts += verdicts(str(kernel), rows, steps, run.samples, mode)
    return report


def _suspect_reference(step: Advice) -> Advice:
    if step.action != Action.FIX_CORRECTNESS:
        return step
    return Advice(step.action, step.because, {**step.detail, "suspect": "reference"})


def _interpreted(run: Run) -> bool:
    return bool((run.manifest.get("options") or {}).get("interpret"))


def why_no_counters(run: Run) -> str | None:
    """Why a timing-only run has no counters (its counter pass's reason); None where it has them."""
    counters = run.manifest.get("counters") or {}
    if not run.timing_only:
        return None
    return counters.get("reason") or f"counters status: {counters.get('status', 'unknown')}"


def _notebook_dir():
    try:
        return lab_dir()
    except ImportError:
        return None


def _history(run: Run, earlier: list[Run], variant: str):
    """The finding against the newest earlier run; steps ruled out by every consecutive pair."""
    chain = [run, *earlier]
    ruled: dict = {}
    first = None
    for newer, older in zip(chain, chain[1:], strict=False):
        finding, out = history.history_finding(newer, older, variant)
        if first is None and newer is run:
            first = finding
        for action, why in out.items():
            ruled.setdefault(action, why)
    if first is not None:
        first.ruled_out = [{"action": str(a), "why": w} for a, w in ruled.items()]
    return first, ruled


def _read_floors(rows: list[dict]) -> dict[str, float]:
    """Per dtype and shape, the fewest DRAM bytes any variant read: the measured one-pass floor."""
    out: dict[str, float] = {}
    for r in rows:
        read = LaunchRecord.of(r).dram_bytes_read
        if read:
            out[where(r)] = min(read, out.get(where(r), read))
    return out


def _subject(row: Mapping) -> str:
    return f"{row['kernel']} {row['variant']} {row['dtype']} {row['shape']}"


@dataclass(frozen=True)
class CaseTables:
    """What a case's finding reads beside its row: its launches and their NVIDIA rule results."""

    launches: dict[str, list[dict]]  # case -> its launches (kernels.csv rows)
    rules: dict[int, list[dict]]  # launch -> its quoted rule results (rules.csv rows)


def case_finding(
    row: Mapping, ctx: Context, tables: CaseTables, no_counters: str | None
) -> Finding:
    """One case's finding: bottleneck, unit, causes and advice, from its row and its launches
    (profkit.workload explains a profile's kernel groups through it too)."""
    f = Finding(
        subject=_subject(row),
        kind=FindingKind.CASE,
        kernel=str(row["kernel"]),
        variant=str(row["variant"]),
        case=text(row, "case"),
        dtype=str(row["dtype"]),
        shape=str(row["shape"]),
    )
    ev = Evidence()
    for col in _TIMING:
        ev.put(col, num(row, col))
    if not timed(row) and not step_timed(row):
        _not_judged(f, row, ev)
        return f
    rows = tables.launches.get(f.case or "", [])
    lab = not as_bool(row.get("baseline"))
    # the family of the launch holding the most time (a memset before a scatter is not the case)
    fam = (
        launches.launch_family(_longest(rows), lab)
        if rows
        else Family.TRITON
        if lab
        else Family.OTHER
    )
    if no_counters or not LaunchRecord.of(row).has_counters:
        _timing_only(f, row, ctx, ev, no_counters or "no counters were captured for this case")
        _throttled(f, row)
        return f
    if len(rows) > 1:
        _chain(f, row, rows, ctx, ev, fam, lab)
    else:
        # the launch's own name tells the catalogue what kind of kernel it is (a gather...)
        named = {**row, "kernel_name": rows[0].get("kernel_name")} if rows else row
        diagnosis = diagnose(LaunchRecord.of(named, fam), ctx)
        ev.update(diagnosis.evidence)
        f.bottleneck, f.unit = diagnosis.bottleneck, diagnosis.unit
        f.reasons, f.next, f.ruled_out = diagnosis.reasons, diagnosis.steps, diagnosis.ruled_out
        f.not_measured = diagnosis.not_measured
    ev.put("family", str(fam))
    f.nvidia_rules = ncu_rules.case_rules(tables.rules, rows, lab)
    f.evidence = dict(ev)
    _throttled(f, row)
    return f


def _longest(rows: list[dict]) -> dict:
    return max(rows, key=lambda r: LaunchRecord.of(r).duration_ms or 0.0)


def _throttled(f: Finding, row: Mapping) -> None:
    """A case that ran at reduced clocks says so (clock_note: NVML's reasons or a low SM clock);
    runs from before clocks were recorded have no clock_note and say nothing."""
    note = text(row, "clock_note")
    if not note:
        return
    f.evidence["clock_note"] = note
    keys = ["clock_note"]
    clock = LaunchRecord.of(row).sm_clock_mhz
    if clock is not None:
        f.evidence["sm_clock_mhz"] = clock
        keys.append("sm_clock_mhz")
    f.reasons.append(Reason(Cause.THROTTLED, keys))


def _chain(
    f: Finding, row: Mapping, rows: list[dict], ctx: Context, ev: Evidence, fam: Family, lab: bool
) -> None:
    """A case of several launches: judged by where its time goes. When one launch holds most of
    the time (a GEMM and its split-K reduction), the case is that launch, judged with the case's
    model; otherwise by the group of launches holding the most time."""
    f.launches = launches.drill_down(rows, ctx, lab=lab)
    top, top_row = max(zip(f.launches, rows, strict=True), key=lambda p: p[0].share_pct or 0.0)
    case = LaunchRecord.of(row)
    diagnosis = None
    if (top.share_pct or 0.0) >= th.DOMINANT_LAUNCH_PCT:
        # the dominant launch's counters, judged with the case's model and timing
        rec = replace(
            LaunchRecord.of(top_row, Family(top.family)),
            model_bytes=case.model_bytes,
            model_flops=case.model_flops,
            device_p50_ms=case.device_p50_ms,
            copy_gbps_same_size=case.copy_gbps_same_size,
        )
        diagnosis = diagnose(rec, ctx)
        if diagnosis is not None and diagnosis.bottleneck != top.bottleneck:
            # what the model shows (its FLOP per byte: a stream ncu calls latency-bound) is that
            # launch's bottleneck too, so the groups of launches say the case's finding
            top.bottleneck, top.unit = diagnosis.bottleneck, diagnosis.unit
    f.bottleneck, where_time = launches.where_time_goes(f.launches, ev)
    # the unit holding most of the dominant group's time (launches without one count as none)
    shares: dict = {}
    for x in f.launches:
        if x.bottleneck == f.bottleneck:
            shares[x.unit] = shares.get(x.unit, 0.0) + (x.share_pct or 0.0)
    f.unit = max(shares, key=lambda u: shares[u]) if shares else None
    f.reasons = [where_time]
    own: list[Advice] = []  # the dominant launch's, already fitted to its own owner
    ruled: list[dict] = []
    if diagnosis is not None:
        ev.update(diagnosis.evidence)
        f.bottleneck, f.unit = diagnosis.bottleneck, diagnosis.unit
        f.reasons += diagnosis.reasons
        # each step names the launch it answers
        own = [Advice(s.action, s.because, {**s.detail, "launch": top.name})
               for s in diagnosis.steps]  # fmt: skip
        ruled = diagnosis.ruled_out
        f.not_measured = diagnosis.not_measured
    steps: list[Advice] = []  # the chain's own: about all its launches
    casts = launches.weight_casts(rows, f.launches) if ctx.dtype == "float32" else None
    if casts:  # autocast's weight casts (aten::_to_copy): the catalogue's entry, on the case
        ev.put("cast_share_pct", casts[1])
        rec = replace(case, param_casts_per_step=float(casts[0]), op="aten::_to_copy")
        said = catalogue.said(catalogue.evaluate(rec), Cause.WEIGHT_CASTS, KernelKind.COPY, ev)
        if said:
            f.reasons.append(said[0])
            steps += said[1]
    outcomes = catalogue.evaluate(case)
    for cause in (Cause.EXTRA_PASSES, Cause.LAUNCH_OVERHEAD):
        said = catalogue.said(outcomes, cause, case.kind, ev)
        if said:
            f.reasons.append(said[0])
            steps += said[1]
    if not steps and not own:
        steps.append(Advice(Action.FUSE, ["launches"]))
    # a library's chain (eager ATen) is fused away where its elementwise launches hold time
    aten = sum(x.share_pct or 0.0 for x in f.launches if x.family == Family.ATEN_ELEMENTWISE)
    lib = Family.ATEN_ELEMENTWISE if aten >= th.STEP_LAUNCH_SHARE_PCT else fam
    steps, withheld = fit_advice(steps, lib if not lab else fam, ctx.ruled_out)
    if lib != Family.ATEN_ELEMENTWISE and all(
        owner(Family(x.family)) == Owner.LIBRARY for x in f.launches
    ):
        # every launch is library code (cuBLAS, Liger...) with ATen's eager elementwise ops
        # holding little time: nothing here is the user's to fuse (catalogue's library_chain)
        steps = [Advice(s.action, s.because, {**s.detail, "library_chain": str(fam)})
                 if s.action == Action.FUSE else s for s in steps]  # fmt: skip
    # and the declared conflicts, against the launch holding the most time (atomics, a sort)
    steps, conflicts = catalogue.resolve(
        steps, f.reasons, LaunchRecord.of(top_row, Family(top.family))
    )
    f.next = [*own, *(s for s in steps if all(s.action != o.action for o in own))]
    f.ruled_out = ruled + withheld + conflicts


def _not_judged(f: Finding, row: Mapping, ev: Evidence) -> None:
    correct = as_bool(row.get("correct"))
    ev.put("first_failure", where(row))
    ev.put(
        "first_failure_error",
        text(row, "error")
        or ("no latency was recorded" if correct else "output does not match the reference"),
    )
    if num(row, "rel_err") is not None:
        ev.put("first_failure_rel_err", num(row, "rel_err"))
    cause = Cause.UNTIMED if correct else Cause.INCORRECT
    f.reasons = [Reason(cause, ["first_failure", "first_failure_error"])]
    f.next = [Advice(Action.FIX_CORRECTNESS, ["first_failure"])] if not correct else []
    f.evidence = dict(ev)


def _timing_only(f: Finding, row: Mapping, ctx: Context, ev: Evidence, reason: str) -> None:
    """Without counters, claim only what timing supports: the share of the copy roof."""
    ev.put("counters_reason", reason)
    f.reasons = [Reason(Cause.NO_COUNTERS, ["counters_reason"])]
    rec = replace(LaunchRecord.of(row), copy_gbps=ctx.device.copy_gbps, siblings=ctx.siblings)
    memory_roof(rec, ev)
    # the copy roof's entry, judged by the copy alone (no DRAM counter)
    outcomes = catalogue.evaluate(replace(rec, dram_pct=None))
    said = catalogue.said(outcomes, Cause.AT_ROOF, rec.kind, ev) or catalogue.said(
        outcomes, Cause.SIBLING_FASTER, rec.kind, ev
    )
    said = quote([said], rec, ctx.siblings, ev)[0] if said else None
    if said and said[0].cause == Cause.AT_ROOF:
        f.reasons.append(said[0])
        f.next = said[1]
    elif said and said[0].cause == Cause.SIBLING_FASTER:
        f.reasons.append(said[0])
        f.next = [*said[1], Advice(Action.CAPTURE_COUNTERS, ["counters_reason"])]
    else:
        f.next = [Advice(Action.CAPTURE_COUNTERS, ["counters_reason"])]
    f.evidence = dict(ev)


# --- a bare report --------------------------------------------------------------------------------


def explain_launches(
    kernels: pd.DataFrame,
    rule_table: pd.DataFrame | None,
    ceilings: dict | None = None,
    manifest: Mapping | None = None,
) -> Report:
    """One finding per kernel launch of a report (kernels.csv-like: counters, no timing)."""
    device = Device.of(manifest or {"ceilings": ceilings or {}})
    report = Report(source="report", mode="report")
    rule_index = ncu_rules.by_launch(rule_table)
    for row in kernels.to_dict("records"):
        name = text(row, "kernel_name") or "kernel"
        fam = family(name)
        rec = LaunchRecord.of(row, fam)
        dtype, source = (str(row.get("dtype")), "") if row.get("dtype") else operand_dtype(rec)
        ctx = Context(device=device_of_row(rec, device), dtype=dtype or "")
        diagnosis = diagnose(rec, ctx)
        ev = Evidence(diagnosis.evidence if diagnosis else {})
        if source:  # a raw report names no dtype: the one its own name or counters show
            ev.put("operand_dtype", dtype)
            ev.put("operand_dtype_from", source)
        ev.put("ncu_duration_ms", rec.duration_ms)
        ev.put("family", str(fam))
        launch = num(row, "launch")
        f = Finding(
            subject=name,
            kind=FindingKind.LAUNCH,
            kernel=text(row, "kernel") or name,
            variant=text(row, "variant"),
            case=text(row, "case"),
            dtype=text(row, "dtype"),
            shape=text(row, "shape"),
            bottleneck=diagnosis.bottleneck if diagnosis else None,
            unit=diagnosis.unit if diagnosis else None,
            reasons=diagnosis.reasons if diagnosis else [],
            next=diagnosis.steps if diagnosis else [],
            nvidia_rules=ncu_rules.launch_rules(rule_index, row),
            not_measured=diagnosis.not_measured if diagnosis else [],
        )
        if launch is not None:
            ev.put("launch", int(launch))
        f.evidence = dict(ev)
        report.findings.append(f)
    return report
