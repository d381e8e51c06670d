"""`profkit capture`: check every case, time the correct ones, run the counter pass, store the run.

Stages, in order: cases -> correctness (float64 reference) -> timing (device time by CUDA-graph
replay with the L2 flushed, host cost, eager-loop time, clocks) -> counters (ncu over
profkit.ncu_program) -> join -> store (atomic). A counter-pass failure leaves a timing-only run
with the reason in its manifest; any other failure leaves no run at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from profkit import store
from profkit.counters import ncu
from profkit.errors import ProfkitError
from profkit.spec import DTYPE_ITEMSIZE, KernelSpec, Shape, case_name, check_names, format_shape

TIMING_COLUMNS = (
    "device_reps",
    "device_p50_ms",
    "device_p95_ms",
    "device_p5_ms",
    "device_iqr_ms",
    "device_method",
    "host_in_window",
    "device_note",
    "device_overhead_us",
    "device_launch_us",
    "device_clock",
    "host_us",
    "loop_us",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "clock_note",
    "clock_throttled",
    "throttle_reasons",
    "gbps",
    "tflops",
    "pct_peak_bw",
    "pct_peak_flops",
    "copy_gbps_same_size",
    "pct_copy_same_size",
)


TIMING_METHOD = {
    "device": "GPU time of one call: CUDA-graph replay, events inside the graph around each call",
    "host": "CPU time of one call: back-to-back calls, no synchronize, idle GPU at the start",
    "loop": "wall time per call of a plain Python loop of calls then one synchronize, L2 warm",
}


@dataclass
class CaptureOptions:
    dtypes: tuple[str, ...]
    shapes: tuple[Shape, ...]
    variants: tuple[str, ...]
    root: Path
    interpret: bool = False
    counters: bool = True
    from_file: str | None = None
    seed: int = 0
    ncu_metrics: tuple[str, ...] | None = None
    ncu_set: str | None = None
    clock_control: str = "none"
    ncu_timeout_s: float = 1800.0
    warm_l2: bool = False  # time with the L2 left warm instead of flushed before each call
    source: bool = (
        False  # after the counter pass, the deep per-line pass (profkit.counters.sourcepass)
    )
    case_timeout_s: float | None = None  # a case (check + timing) that runs longer is skipped
    # index of the first case in the whole sweep: a case group run apart (profkit.cluster) checks
    # each case with the same seed as the whole sweep in one process would
    case_offset: int = 0
    # variants left out of the sweep (runnable_variants), with why: the manifest keeps them
    skipped: dict[str, str] = field(default_factory=dict)


def runnable_variants(
    spec: KernelSpec, names: tuple[str, ...], interpret: bool
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The variants among names that can run here, and why each other one is skipped: a module
    it requires is missing (an optional extra, e.g. Liger-Kernel), or it cannot run under
    Triton's interpreter. None left is an input error."""
    kept, skipped = [], {}
    for name in names:
        variant = spec.variant(name)
        missing = [m for m in variant.requires if importlib.util.find_spec(m) is None]
        if missing:
            where = f" ({variant.description})" if variant.description else ""
            skipped[name] = f"needs {', '.join(missing)}, not installed here{where}"
        elif interpret and not variant.interpretable:
            skipped[name] = "its kernels do not run under Triton's interpreter"
        else:
            kept.append(name)
    if not kept:
        why = "; ".join(f"{n}: {r}" for n, r in skipped.items())
        raise ProfkitError(f"{spec.name}: no variant can run here ({why})")
    return tuple(kept), skipped


def cases(opts: CaptureOptions) -> list[tuple[str, str, Shape]]:
    return [(v, d, s) for d in opts.dtypes for s in opts.shapes for v in opts.variants]


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def measure_cases(
    spec: KernelSpec, opts: CaptureOptions, console: Console, ceilings: dict
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Correctness for every case; timing for the correct ones (not in interpret mode). Returns
    the case table and the raw samples (case, kind, ms)."""
    from profkit.measure import case_timing, correctness

    device = "cpu" if opts.interpret else "cuda"
    prepared: dict = {}
    copies: dict[int, float] = {}
    rows, samples = [], []
    todo = cases(opts)
    with _progress(console) as bar:
        task = bar.add_task(f"{spec.name}: check + time", total=len(todo))
        for i, (variant_name, dtype, shape) in enumerate(todo):
            variant = spec.variant(variant_name)
            name = case_name(spec.name, variant_name, dtype, shape)
            bar.update(task, description=name)
            row = {
                "kernel": spec.name,
                "variant": variant_name,
                "baseline": variant.baseline,
                "dtype": dtype,
                "shape": format_shape(shape),
                "case": name,
            }

            given_up = threading.Event()  # set when the case ran past --case-timeout

            def run_case(variant=variant, dtype=dtype, shape=shape, i=i, given_up=given_up):
                try:
                    fn = case_timing.resolve_callable(variant, prepared)
                    # fresh random inputs for each check: a fixed seed per case, distinct ones
                    # across cases
                    seed = opts.seed * 100003 + opts.case_offset + i
                    chk = correctness.check(spec, fn, shape, dtype, device, seed=seed)
                except Exception as exc:  # a variant that cannot even be prepared is recorded
                    chk = correctness.Check(False, None, None, f"{type(exc).__name__}: {exc}"[:300])
                except SystemExit as exc:  # the case's failure: profkit's exit status stays its own
                    return correctness.Check(False, None, None, _exit_text(exc)), None
                t = None
                # a case given up on stops before timing: its graphs would be captured while the
                # next case's are (and its numbers are thrown away anyway)
                if chk.correct and not opts.interpret and not given_up.is_set():
                    try:
                        t = case_timing.time_case(
                            spec, fn, shape, dtype, opts.seed + 7, opts.warm_l2
                        )
                    except SystemExit as exc:
                        return correctness.Check(False, None, None, _exit_text(exc)), None
                return chk, t

            done = within(opts.case_timeout_s, run_case)
            if done is None:
                given_up.set()
                why = f"timed out after {opts.case_timeout_s:g} s (--case-timeout): skipped"
                console.print(f"[red]{name}:[/] {why}")
                chk, t = correctness.Check(False, None, None, why), None
            else:
                chk, t = done
            row.update(
                correct=chk.correct,
                rel_err=chk.rel_err,
                max_abs_err=chk.max_abs_err,
                error=chk.error,
            )
            nbytes = spec.bytes_moved(shape, DTYPE_ITEMSIZE[dtype])
            flops = spec.flops(shape)
            row.update(bytes=nbytes, flops=flops)
            if t is not None:
                row.update(t.columns)
                row.update(rates(nbytes, flops, t.columns["device_p50_ms"], ceilings))
                same = case_timing.copy_gbps(nbytes, copies)
                row.update(copy_gbps_same_size=same, pct_copy_same_size=100 * row["gbps"] / same)
                samples += [(name, kind, ms) for kind, ms in t.samples]
                if t.columns.get("clock_note"):
                    console.print(f"[yellow]clocks:[/] {name}: {t.columns['clock_note']}")
            rows.append(row)
            bar.advance(task)
    # the same columns whether or not anything was timed (interpret mode, all incorrect); a list,
    # since Index.drop reads a tuple as one label and would keep (and so repeat) every column
    table = pd.DataFrame(rows)
    table = table.reindex(
        columns=[*table.columns.drop(list(TIMING_COLUMNS), errors="ignore"), *TIMING_COLUMNS]
    )
    return table, pd.DataFrame(samples, columns=["case", "kind", "ms"])


def _exit_text(exc: SystemExit) -> str:
    """A case's code that called sys.exit(...) (the variant's, its inputs' or the reference's)."""
    return f"SystemExit: the case's code called sys.exit({exc.code!r})"[:300]


def within(limit_s: float | None, work: Callable[[], Any]) -> Any:
    """work()'s result, or None when it ran past limit_s seconds (no limit: run it here).

    A thread with a watchdog, not a child process per case: a child would pay torch's import, a
    CUDA context and Triton's compile for every case (seconds each, minutes over a sweep) and
    could not share the prepared callables (torch.compile) or the copy-rate cache. The price: a
    thread cannot be killed, so a hung case keeps running in the background (a daemon thread, gone
    when profkit exits); on the GPU a kernel that never ends also keeps its stream busy, so the
    cases after it may time out too, each reported, none waited for past its limit."""
    if limit_s is None:
        return work()
    out: list = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # re-raised in the caller's thread below
            failed.append(exc)

    worker = threading.Thread(target=target, name="profkit-case", daemon=True)
    worker.start()
    worker.join(limit_s)
    if worker.is_alive():
        return None
    if failed:
        raise failed[0]
    return out[0]


def rates(nbytes: int, flops: int, device_p50_ms: float, ceilings: dict) -> dict:
    gbps = nbytes / (device_p50_ms * 1e-3) / 1e9
    tflops = flops / (device_p50_ms * 1e-3) / 1e12
    out = {"gbps": gbps, "tflops": tflops}
    if ceilings.get("copy_gbps"):
        out["pct_peak_bw"] = 100 * gbps / ceilings["copy_gbps"]
    if ceilings.get("matmul_tflops"):
        out["pct_peak_flops"] = 100 * tflops / ceilings["matmul_tflops"]
    return out


def counter_pass(
    spec: KernelSpec,
    opts: CaptureOptions,
    table: pd.DataFrame,
    writer: store.RunWriter,
    console: Console,
) -> tuple[dict, pd.DataFrame | None]:
    """Profile the correct cases under ncu; returns the manifest block and the kernel table."""
    correct = table[table.correct.astype(bool)]
    if correct.empty:
        return {
            "status": "timing_only",
            "problem": "no_cases",
            "reason": "no correct case to profile",
        }, None
    job = {
        "kernel": spec.name,
        "from_file": opts.from_file,
        "seed": opts.seed,
        "cases": [
            {"variant": r.variant, "dtype": r.dtype, "shape": [int(d) for d in r.shape.split("x")]}
            for r in correct.itertuples()
        ],
    }
    job_path = writer.path("ncu-job.json")
    console.print(f"counter pass: ncu over {len(job['cases'])} cases (kernel replay) ...")
    crashed: list[str] = []
    while True:
        job_path.write_text(json.dumps(job))
        result = _ncu_once(job_path, opts, writer, console)
        culprit = _crashed_case(result, job, writer.path("ncu.log"))
        if culprit is None or len(crashed) >= MAX_CRASH_RETRIES:
            break
        # one case took ncu (or the program) down: profile the others again without it
        crashed.append(culprit)
        job["cases"] = [c for c in job["cases"] if _job_case_name(spec, c) != culprit]
        console.print(
            f"[yellow]ncu crashed while profiling {culprit}[/] ({result.reason}); "
            f"profiling the other {len(job['cases'])} cases again"
        )
    job_path.unlink()
    block = result.to_manifest()
    if crashed:
        block["crashed_cases"] = crashed  # no counters for these: ncu died on each
    if not result.ok:
        console.print(f"[yellow]timing only:[/] {result.message}")
        return block, None
    from profkit.counters.ncu_rep import read_report

    try:
        tables = read_report(result.report_path, result.metrics)
    except ProfkitError as exc:  # e.g. an ncu_report older than the ncu that wrote the report
        block.update(
            status="timing_only",
            problem="report_unreadable",
            reason=str(exc),
            fix=f"Fix: the report stays in the run as {store.REPORT}; read it with "
            "`profkit show PATH` once ncu_report matches your ncu (pip install "
            "-U ncu-report).",
        )
        console.print(f"[yellow]timing only:[/] {exc}")
        return block, None
    if tables.metrics_na:
        block["metrics_na"] = list(tables.metrics_na)
        console.print(f"[yellow]note:[/] {ncu.metrics_na_message(tables.metrics_na)}")
    writer.write_table(store.KERNELS, tables.kernels)
    if tables.rules is not None and not tables.rules.empty:
        writer.write_table(store.RULES, tables.rules)
    console.print(f"counter pass: {len(tables.kernels)} kernel launches in {result.wall_s:.1f} s")
    return block, tables.kernels


MAX_CRASH_RETRIES = 3  # each retry is a whole counter pass again


def _ncu_once(job_path: Path, opts: CaptureOptions, writer: store.RunWriter, console: Console):
    program = [sys.executable, "-m", "profkit.ncu_program", str(job_path)]
    # a spinner on a terminal: the pass runs for minutes (each kernel replayed ~13 times)
    with console.status("ncu is profiling ..."):
        return ncu.run_counter_pass(
            program,
            writer.path(store.REPORT),
            timeout_s=opts.ncu_timeout_s,
            log_path=writer.path("ncu.log"),
            metrics=opts.ncu_metrics,
            set_name=opts.ncu_set,
            clock_control=opts.clock_control,
        )


def _job_case_name(spec: KernelSpec, case: dict) -> str:
    return case_name(spec.name, case["variant"], case["dtype"], tuple(case["shape"]))


def _crashed_case(result: ncu.CounterPass, job: dict, log_path: Path) -> str | None:
    """The case the worker had started when ncu died, if the pass crashed (a signal, or an exit
    without a report) part-way through a job of several cases; None otherwise."""
    if result.ok or len(job["cases"]) < 2:
        return None
    # the program died of a signal (exit >= 128), or ncu itself failed mid-pass; an ordinary
    # error exit means every case failed in Python (the worker's own rule): nothing to isolate
    if not (result.problem == "ncu_failed" or (result.app_code or 0) >= 128):
        return None
    from profkit.ncu_program import CASE_MARK

    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    started = [line.split(CASE_MARK, 1)[1].strip() for line in lines if CASE_MARK in line]
    return started[-1] if started else None


# ---- input checks, before any work ---------------------------------------------------------------


def unique(option: str, values: tuple, show: Callable[[Any], str], notes: list[str]) -> tuple:
    """values without repeats, in order; a note for each value given more than once."""
    counts = Counter(values)
    for value, n in counts.items():
        if n > 1:
            notes.append(f"{option} {show(value)} given {n} times: measured once")
    return tuple(counts)


def _memory_limit(interpret: bool) -> tuple[int, str]:
    """(bytes, what) of the memory the cases' tensors must fit in."""
    import torch

    if interpret or not torch.cuda.is_available():  # no GPU: its tensors would live on the host
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "this host's memory"
    return torch.cuda.get_device_properties(0).total_memory, "the GPU's memory"


def check_shapes(spec: KernelSpec, opts: CaptureOptions) -> None:
    """A shape the spec's bytes/flops model cannot take (e.g. 1-D for a 2-D kernel), or whose
    tensors cannot fit in memory, is an input error, reported before any work, not a traceback or
    a sweep of failed cases."""
    limit, where = _memory_limit(opts.interpret)
    # the ranks the spec's own sweeps use: a bytes model that reads shape[0] and shape[1] counts
    # 2x8x4 as 2x8, a quarter of its bytes, and GB/s would be under-reported 4x, silently
    ranks = sorted({len(s) for s in (*spec.shapes, *spec.interpret_shapes)})
    for shape in opts.shapes:
        try:
            need = max(spec.bytes_moved(shape, DTYPE_ITEMSIZE[d]) for d in opts.dtypes)
            spec.flops(shape)
        except Exception as exc:  # the spec's own code
            raise ProfkitError(
                f"{spec.name} does not take shape {format_shape(shape)!r}: its "
                f"bytes/flops model failed ({type(exc).__name__}: {exc})"
            ) from exc
        if len(shape) not in ranks:
            takes = " or ".join(f"{r}-D" for r in ranks)
            like = ", ".join(format_shape(s) for s in spec.shapes[:2])
            raise ProfkitError(
                f"{spec.name} does not take shape {format_shape(shape)!r} ({len(shape)}-D): it "
                f"takes {takes} shapes, as its sweep's ({like})"
            )
        if need > limit:
            raise ProfkitError(
                f"shape {format_shape(shape)} is too large: its tensors take at least {need:.3g} "
                f"bytes ({spec.name}'s bytes model), more than {where} ({limit / 1e9:.0f} GB)"
            )


def run_manifest(
    spec: KernelSpec,
    opts: CaptureOptions,
    timing_s: float,
    fingerprint: dict,
    ceilings: dict,
    counters: dict,
) -> dict:
    """A run's manifest: what was asked (kernel, options, command), how it was timed, on what,
    and its counter pass (a one-process capture and a cluster's merged run alike)."""
    return {
        "kind": store.CAPTURE,
        "kernel": spec.name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": "interpret" if opts.interpret else "gpu",
        "source": spec.source,
        "command": " ".join(["profkit", *sys.argv[1:]]),
        "options": {
            "dtypes": list(opts.dtypes),
            "shapes": [format_shape(s) for s in opts.shapes],
            "variants": list(opts.variants),
            "seed": opts.seed,
            "interpret": opts.interpret,
            "warm_l2": opts.warm_l2,
            "case_timeout_s": opts.case_timeout_s,
        },
        "timing": TIMING_METHOD
        | {"l2": "warm" if opts.warm_l2 else "flushed before each call", "wall_s": timing_s},
        "fingerprint": fingerprint,
        "ceilings": ceilings,
        "counters": counters,
        "skipped_variants": opts.skipped,
        "env": {k: os.environ[k] for k in ("TRITON_INTERPRET",) if k in os.environ},
    }


def run_capture(spec: KernelSpec, opts: CaptureOptions, console: Console | None = None) -> Path:
    from profkit import hostenv
    from profkit.counters.join import aggregate_cases, join

    console = console or Console(stderr=True)
    check_names(spec)
    if not opts.interpret:
        import torch

        if not torch.cuda.is_available():
            raise ProfkitError(
                "no CUDA GPU here: capture needs one (use --interpret to check "
                "correctness through Triton's interpreter on the CPU)"
            )
    check_shapes(spec, opts)
    for name, why in opts.skipped.items():  # said once the sweep is known to be valid
        console.print(f"note: {spec.name} variant {name} skipped: {why}", markup=False)
    try:
        writer = store.RunWriter(opts.root, spec.name)
    except OSError as exc:
        raise ProfkitError(f"cannot store a run under {opts.root}: {exc}") from exc
    try:
        fingerprint = hostenv.fingerprint()
        ceilings = {} if opts.interpret else hostenv.measure_ceilings()
        if ceilings:
            console.print(
                f"ceilings: copy {ceilings['copy_gbps']:.0f} GB/s, bf16 matmul "
                f"{ceilings['matmul_tflops']:.0f} TFLOP/s"
            )
        started = time.perf_counter()
        table, samples = measure_cases(spec, opts, console, ceilings)
        timing_s = round(time.perf_counter() - started, 1)
        if not samples.empty:
            writer.write_samples(samples)
        if opts.interpret:
            counters = {"status": "skipped", "reason": "interpret mode: correctness only"}
            kernels = None
        elif not opts.counters:
            counters = {"status": "skipped", "reason": "--no-counters: timing only"}
            kernels = None
        else:
            counters, kernels = counter_pass(spec, opts, table, writer, console)
        source = None
        if opts.source and not opts.interpret and opts.counters:
            from profkit.counters.sourcepass import source_pass

            source = source_pass(
                spec.name,
                opts.from_file,
                opts.seed,
                kernels,
                writer,
                console,
                timeout_s=opts.ncu_timeout_s,
                clock_control=opts.clock_control,
                counter_wall_s=counters.get("wall_s"),
            )
        joined = join(table, aggregate_cases(kernels) if kernels is not None else None)
        writer.write_table(store.CASES, joined)
        manifest = run_manifest(spec, opts, timing_s, fingerprint, ceilings, counters)
        if source is not None:
            manifest["source_pass"] = source
        return writer.finish(manifest)
    except BaseException:
        writer.abandon()  # interrupted or failed: leave nothing that looks like a run
        raise
