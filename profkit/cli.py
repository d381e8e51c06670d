"""The command line: each command only wires stages together (spec -> capture -> store -> show)."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from profkit import doctor as doctor_help
from profkit import exitcodes, failures, terminal
from profkit.counters import ncu as ncu_limits
from profkit.errors import ProfkitError

# the columns `show --format table` prints, and their headers; csv and json carry every column
SHOW_COLUMNS = {
    "kernel": "kernel",
    "variant": "variant",
    "dtype": "dtype",
    "shape": "shape",
    "gpu": "GPU",  # a run spread over a cluster: the GPU each case ran on
    "time_share_pct": "share %",  # a profile run's kernel groups (profkit profile)
    "launches": "launches",
    "correct": "correct",
    "device_p50_ms": "p50 ms",
    "device_p95_ms": "p95 ms",
    "device_iqr_ms": "IQR ms",
    "host_us": "host us",
    "gbps": "GB/s",
    "pct_peak_bw": "% copy BW",
    "tflops": "TFLOP/s",
    "kernel_count": "kernels",
    "dram_throughput_pct": "DRAM %",
    "achieved_occupancy_pct": "occupancy %",
    "tensor_pipe_pct": "tensor %",
    "dram_bytes": "DRAM bytes",
}
# on a narrow terminal, the columns kept longest (the kernel is in the title line already)
SHOW_KEEP = (
    "variant",
    "time_share_pct",
    "dtype",
    "shape",
    "correct",
    "device_p50_ms",
    "host_us",
    "gbps",
    "pct_peak_bw",
    "device_iqr_ms",
    "dram_throughput_pct",
    "achieved_occupancy_pct",
    "kernel_count",
    "device_p95_ms",
    "tflops",
    "tensor_pipe_pct",
    "dram_bytes",
)
LAUNCH_COLUMNS = {
    "launch": "launch",
    "nvtx_range": "nvtx_range",
    "kernel_name": "kernel_name",
    "ncu_duration_ms": "ncu ms",
    "dram_throughput_pct": "DRAM %",
    "sm_throughput_pct": "SM %",
    "achieved_occupancy_pct": "occupancy %",
    "tensor_pipe_pct": "tensor %",
    "dram_bytes": "DRAM bytes",
    "grid_size": "grid",
    "block_size": "block",
    "waves_per_sm": "waves/SM",
}
# `show --lines`: the per-line table's columns (docs/tables.md, source_lines.csv)
LINE_COLUMNS = {
    "launch": "launch",
    "line": "line",
    "samples": "samples",
    "stall_long_scoreboard": "long sb",
    "inst_executed": "warp inst",
    "global_sectors": "sectors",
    "excess_sectors": "excess",
    "local_inst": "spill inst",
    "source": "source",
    "file": "file",
}
LINE_KEEP = ("launch", "line", "samples", "source", "inst_executed", "local_inst", "file")
# nvtx_range is the only column that says which case a launch belongs to: kept second
LAUNCH_KEEP = ("launch", "nvtx_range", "kernel_name", "ncu_duration_ms", "dram_throughput_pct",
               "sm_throughput_pct", "achieved_occupancy_pct")  # fmt: skip


class ProfkitGroup(click.Group):
    """Every expected failure ends in one line on stderr and exit status 1 (usage errors: 2); the
    other statuses are in profkit.exitcodes. Errors from the system (a name too long, a full disk)
    are expected failures too; a reader that stops reading stdout (`| head -1`) is none."""

    def parse_args(self, ctx, args):  # noqa: D102
        if not args and not ctx.resilient_parsing:  # bare `profkit`: its help, as git does
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(exitcodes.OK)
        return super().parse_args(ctx, args)

    def main(self, *args, **kwargs):  # noqa: D102
        kwargs["standalone_mode"] = False
        if sys.stdout is None:  # started with stdout closed (`>&-`): every line would be lost
            click.echo("error: standard output is closed: nothing can be shown", err=True)
            sys.exit(exitcodes.ERROR)
        stdout, sys.stdout = sys.stdout, failures.GuardedOutput(sys.stdout)
        try:
            rv = super().main(*args, **kwargs)
            sys.stdout.flush()  # a write that fails is this command's failure, not exit 0
        except failures.OutputLost as exc:
            _stdout_lost(stdout, exc)
        except ProfkitError as exc:
            _fail(str(exc))
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort as exc:
            if isinstance(exc.__cause__, EOFError):  # click reads a file's early end as Abort
                _fail(f"input ended early (EOFError: {exc.__cause__})")
            click.echo("aborted", err=True)
            sys.exit(exitcodes.INTERRUPTED)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except OSError as exc:  # the system's: a name too long, a full disk, no permission
            _fail(failures.os_error_line(exc))
        finally:
            sys.stdout = stdout
        if isinstance(rv, int) and rv:
            sys.exit(rv)
        sys.exit(0)


def _fail(message: str, status: int = exitcodes.ERROR) -> None:
    click.echo(f"error: {failures.cut_long_words(message)}", err=True)
    sys.exit(status)


def _stdout_lost(stdout, exc: failures.OutputLost) -> None:
    # point stdout at /dev/null first: Python's own flush at exit would fail again
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    except (OSError, ValueError):
        pass
    if exc.reader_gone:  # `| head -1`: the reader has what it wanted
        sys.exit(exitcodes.OK)
    _fail(f"could not write to standard output: {exc}")


@click.group(cls=ProfkitGroup, epilog=exitcodes.HELP)
@click.version_option(package_name="profkit")
def cli() -> None:
    """profkit: why is my kernel this fast, and what do I try next?"""


def main() -> None:
    cli()


# ---- capture / list ----


def _positive_seconds(ctx, param, value):
    """A time limit: a finite number of seconds above zero (not -5, nan or inf)."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"must be a finite number of seconds above 0, not {value:g}")
    return value


def _dtype_help() -> str:
    """--dtype's help: the names, each with its aliases (spec.DTYPE_ALIASES)."""
    from profkit.dtypes import DTYPE_ALIASES

    aliases: dict[str, list[str]] = {}
    for alias, name in DTYPE_ALIASES.items():
        aliases.setdefault(name, []).append(alias)
    names = ", ".join(f"{name} ({', '.join(a)})" for name, a in aliases.items())
    return f"a dtype the kernel takes (`profkit list`), or an alias: {names} (repeatable)"


SEED_RANGE = click.IntRange(0, 2**32 - 1)  # each case seeds torch with seed * 100003 + its index


@cli.command(epilog=exitcodes.HELP)
@click.argument("kernels", nargs=-1, required=True, metavar="KERNEL...")
@click.option(
    "--from",
    "from_file",
    type=click.Path(dir_okay=False),
    help="a Python file defining your own KernelSpec (else the lab's kernels/)",
)
@click.option("--dtype", "dtypes", multiple=True, help=_dtype_help())
@click.option(
    "--shape",
    "shapes",
    multiple=True,
    help="N, MxN or MxNxK as the kernel takes, e.g. 4096x8192 (repeatable)",
)
@click.option("--variant", "variants", multiple=True, help="a variant name (repeatable)")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False),
    default=None,
    help="directory the run is stored under [default: profiles/]",
)
@click.option(
    "--interpret",
    is_flag=True,
    help="no GPU: check every variant's correctness through Triton's interpreter",
)
@click.option("--no-counters", is_flag=True, help="timing only: skip the ncu counter pass")
@click.option(
    "--metrics", default=None, help="comma-separated ncu metrics instead of profkit's set"
)
@click.option("--set", "ncu_set", default=None, help="an ncu section set instead (e.g. full)")
@click.option(
    "--clock-control",
    type=click.Choice(["none", "base"]),
    default="none",
    show_default=True,
    help="ncu clock control: none leaves the GPU clocks as found",
)
@click.option(
    "--ncu-timeout",
    type=float,
    default=1800,
    show_default=True,
    callback=_positive_seconds,
    help="seconds the counter pass may run",
)
@click.option(
    "--warm-l2",
    is_flag=True,
    help="time with the L2 left warm (default: flushed before every call, as ncu does)",
)
@click.option(
    "--source",
    is_flag=True,
    help="after the counter pass, a deep ncu pass (SourceCounters, warp stalls, source imported) "
    "over each case's dominant launch: its hot lines; its cost is printed",
)
@click.option(
    "--case-timeout",
    type=float,
    default=None,
    callback=_positive_seconds,
    help="seconds a case (its check and timing) may run; one that runs longer is reported as "
    "timed out and skipped, and the sweep goes on [default: no limit]",
)
@click.option(
    "--seed",
    type=SEED_RANGE,
    default=0,
    show_default=True,
    help="seed of the cases' random inputs (0 to 4294967295)",
)
@click.option(
    "--cluster",
    default=None,
    help="spread the sweep over Dask: local (this host's GPUs) or tcp://HOST:8786, tls://...",
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="--cluster local: workers"
)
def capture(
    kernels,
    from_file,
    dtypes,
    shapes,
    variants,
    out,
    interpret,
    no_counters,
    metrics,
    ncu_set,
    clock_control,
    ncu_timeout,
    warm_l2,
    source,
    case_timeout,
    seed,
    cluster,
    workers,
) -> int:
    """Check, time and profile KERNELS' variants; store one run per kernel under profiles/."""
    if source and (no_counters or interpret):
        flag = "--no-counters" if no_counters else "--interpret"
        raise click.UsageError(
            f"--source needs the counter pass (it profiles each case's dominant launch, which "
            f"that pass finds): drop {flag}"
        )
    if source and cluster:
        raise click.UsageError("--source runs in one process only: drop --cluster")
    from profkit.capture import CaptureOptions, run_capture, runnable_variants, unique
    from profkit.spec import find_spec, format_shape, normalize_dtype, parse_shape
    from profkit.store import default_root

    if interpret:
        # must be set before triton is imported by the kernel's module
        os.environ["TRITON_INTERPRET"] = "1"
    if variants and len(kernels) > 1:
        raise ProfkitError("--variant names one kernel's variants: capture one kernel with it")
    if workers and cluster != "local":
        raise ProfkitError("--workers sets the size of a --cluster local")
    parsed_shapes = tuple(parse_shape(s) for s in shapes)
    jobs = []
    for kernel in kernels:
        spec = find_spec(kernel, from_file)
        # a repeated option is measured once (and said so), never as duplicate cases
        notes = []
        k_dtypes = unique("--dtype", tuple(normalize_dtype(spec, d) for d in dtypes), str, notes)
        k_variants = unique("--variant", tuple(spec.variant(v).name for v in variants), str, notes)
        k_shapes = unique("--shape", parsed_shapes, format_shape, notes)
        for note in notes:
            click.echo(f"note: {note}", err=True)
        k_dtypes = k_dtypes or spec.dtypes
        k_variants = k_variants or tuple(v.name for v in spec.variants)
        k_variants, skipped = runnable_variants(spec, k_variants, interpret)
        if interpret:
            shape_set = k_shapes or spec.interpret_shapes
        else:
            shape_set = k_shapes or spec.shapes

        opts = CaptureOptions(
            dtypes=k_dtypes,
            shapes=shape_set,
            variants=k_variants,
            root=Path(out) if out else default_root(),
            interpret=interpret,
            counters=not no_counters,
            from_file=from_file,
            seed=seed,
            ncu_metrics=tuple(m for m in metrics.split(",") if m) if metrics else None,
            ncu_set=ncu_set,
            clock_control=clock_control,
            ncu_timeout_s=ncu_timeout,
            warm_l2=warm_l2,
            source=source,
            case_timeout_s=case_timeout,
            skipped=skipped,
        )
        jobs.append((spec, opts))
    for root in dict.fromkeys(opts.root for _, opts in jobs):
        _sweep_stale(root)
    if cluster:
        from profkit.cluster import run_cluster_capture  # Dask only under --cluster

        for spec, opts in jobs:  # one process says these in run_capture, after its checks
            for name, why in opts.skipped.items():
                click.echo(f"note: {spec.name} variant {name} skipped: {why}", err=True)
        paths = run_cluster_capture(jobs, cluster, workers)
    else:
        paths = [run_capture(spec, opts) for spec, opts in jobs]
    from profkit import store

    statuses = []
    for path in paths:
        run = store.load(path)
        _print_table(run.cases, "table", SHOW_COLUMNS, SHOW_KEEP)
        wrong = run.cases[~run.cases.correct.astype(bool)]
        said = [f"{len(wrong)} incorrect case(s)"] if len(wrong) else []
        if run.interpret:
            said.append("interpret run: correctness only, untimed; read it by name")
        click.echo(f"stored {path}" + (f" ({'; '.join(said)})" if said else ""))
        statuses.append(_correctness_status(run.cases, wrong))
    return max(statuses)  # the worst over the kernels (exitcodes)


@cli.command(epilog=exitcodes.HELP)
@click.argument("kernel")
@click.option("--variant", default=None, help="the variant to tune [default: its tunable one]")
@click.option("--shape", default=None, help="the case, MxN [default: the sweep's first shape]")
@click.option("--dtype", default=None, help="the case's dtype [default: the spec's first]")
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=None,
    help="configurations measured at most [default: a quarter of the grid]",
)
@click.option("--set", "restrict", multiple=True, help="NAME=V1,V2: only these values of a tunable")
@click.option("--from", "from_file", type=click.Path(dir_okay=False), help="your own spec file")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="[default: profiles/]")
@click.option("--interpret", is_flag=True, help="no GPU: check every configuration's correctness")
@click.option(
    "--cluster", default=None, help="each round as a Dask sweep: local or tcp://HOST:PORT"
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="--cluster local: workers"
)
@click.option(
    "--seed",
    type=SEED_RANGE,
    default=0,
    show_default=True,
    help="seed of the cases' random inputs (0 to 4294967295)",
)
@click.option(
    "--ncu-timeout",
    type=float,
    default=600,
    show_default=True,
    callback=_positive_seconds,
    help="seconds each round's counter pass may run",
)
def tune(**opts) -> int:
    """Tune KERNEL's variant: counters propose configurations, a sweep measures them, explain says
    why the winner wins; stored as a run of kind tune."""
    from profkit.store import default_root
    from profkit.tune.command import tune_command

    _sweep_stale(Path(opts["out"]) if opts["out"] else default_root())
    run = tune_command(**opts)  # the options by name, as tune_command takes them
    return _correctness_status(run.cases, run.cases[~run.cases.correct.astype(bool)])


@cli.command(
    epilog=exitcodes.HELP,
    context_settings={"allow_interspersed_args": False},
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- COMMAND...")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="kernel groups the counter pass profiles, by device time",
)
@click.option(
    "--kernel-regex",
    default=None,
    help="the counter pass profiles only kernels whose name matches (Python regex)",
)
@click.option(
    "--range",
    "range_name",
    default=None,
    help="the counter pass profiles only kernels inside this range (a user NVTX or "
    "record_function range, or a PyTorch op)",
)
@click.option(
    "--launch-skip",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="launches of each group skipped before the profiled one (as ncu's)",
)
@click.option(
    "--launch-count",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="launches of each group profiled (as ncu's)",
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=None,
    help="measure the last K steps (the earlier ones are warm-up); needs --step-range",
)
@click.option("--step-range", default=None, help="the NVTX range that marks one step")
@click.option(
    "--group-by",
    type=click.Choice(["range", "op"]),
    default="range",
    show_default=True,
    help="group kernels by their innermost user range, or by PyTorch op "
    "(the ranges emit_nvtx would emit)",
)
@click.option("--no-counters", is_flag=True, help="timing pass only: skip ncu")
@click.option(
    "--no-pace",
    is_flag=True,
    help="skip the pace pass (with --step-range: the program run once more without the "
    "profiler, to time a step as it runs alone)",
)
@click.option(
    "--source",
    is_flag=True,
    help="then a source pass over the same launches: their hot source lines",
)
@click.option(
    "--emit-nvtx",
    is_flag=True,
    help="the counter pass under torch.autograd.profiler.emit_nvtx: ncu's report names each "
    "kernel's PyTorch op range",
)
@click.option(
    "--run-to-end",
    is_flag=True,
    help="the counter pass lets the program finish (by default, with --step-range, it is "
    "stopped after its last profiled op call: its later steps profile nothing)",
)
@click.option(
    "--ncu-timeout",
    type=float,
    default=1800.0,
    show_default=True,
    callback=_positive_seconds,
    help="seconds before the ncu run is stopped",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="store the run here (default: profiles/)",
)
def profile(command, top, kernel_regex, range_name, launch_skip, launch_count, steps, step_range,
            group_by, no_counters, no_pace, source, emit_nvtx, run_to_end, ncu_timeout,
            out) -> int:  # fmt: skip
    """Profile your own program: kernels ranked by device time, then counters on the top ones.

    profkit profile [OPTIONS] -- python train.py ARGS (arguments after -- pass through untouched)
    """
    import re

    from profkit.store import default_root
    from profkit.workload.profile import ProfileOptions, run_profile, top_lines
    from profkit.workload.program import parse_program

    if steps is not None and step_range is None:
        raise click.UsageError("--steps needs --step-range NAME (the range that marks a step)")
    if source and no_counters:
        raise click.UsageError("--source profiles the launches the counter pass picks: drop one")
    if kernel_regex is not None:
        try:
            re.compile(kernel_regex)
        except re.error as exc:
            bad = f"--kernel-regex {kernel_regex!r} is not a regex: {exc}"
            raise click.UsageError(bad) from None
    program = parse_program(command)
    _sweep_stale(Path(out) if out else default_root())
    opts = ProfileOptions(
        root=Path(out) if out else default_root(),
        top=top,
        kernel_regex=kernel_regex,
        range_name=range_name,
        launch_skip=launch_skip,
        launch_count=launch_count,
        steps=steps,
        step_range=step_range,
        group_by=group_by,
        counters=not no_counters,
        pace=not no_pace,
        source=source,
        emit_nvtx=emit_nvtx,
        run_to_end=run_to_end,
        ncu_timeout_s=ncu_timeout,
    )
    outcome = run_profile(program, opts)
    from profkit import store

    run = store.load(outcome.path)
    for line in top_lines(run.cases, top):
        click.echo(line)
    click.echo(f"stored {outcome.path}")
    return exitcodes.OK if outcome.exit_status == 0 else exitcodes.ERROR


def _sweep_stale(root: Path) -> None:
    """Remove what killed captures left under root (store.sweep_stale), and say so."""
    from profkit import store

    swept = store.sweep_stale(root)
    if swept:
        more = f" and {len(swept) - 3} more" if len(swept) > 3 else ""
        click.echo(
            f"note: removed {len(swept)} unfinished run folder(s) under {root}/ left by "
            f"captures that were killed: {', '.join(swept[:3])}{more}",
            err=True,
        )


def _correctness_status(cases, wrong) -> int:
    """capture's exit status, with the incorrect cases summed up on stderr (exitcodes)."""
    if wrong.empty:
        return exitcodes.OK
    nothing = len(wrong) == len(cases)
    head = f"{len(wrong)} of {len(cases)} case(s) incorrect" + (
        ": nothing could be measured" if nothing else ""
    )
    status = exitcodes.NOTHING_MEASURED if nothing else exitcodes.INCORRECT
    click.echo(f"{head} (exit status {status})", err=True)
    shown = 5
    for row in wrong.head(shown).itertuples():
        error = row.error if isinstance(row.error, str) and row.error else "incorrect"
        click.echo(f"  {row.case}: {error}", err=True)
    if len(wrong) > shown:
        click.echo(f"  ... and {len(wrong) - shown} more (`profkit show` lists them)", err=True)
    return status


@cli.command(name="list")
@click.option(
    "--from",
    "from_file",
    type=click.Path(dir_okay=False),
    help="a Python file defining your own KernelSpecs (else the lab's kernels/)",
)
def list_kernels(from_file) -> None:
    """List kernels, their variants, dtypes and default shapes."""
    from profkit.spec import format_shape, list_specs

    specs = list_specs(from_file)
    if from_file and not specs:
        raise ProfkitError(f"{from_file} defines no KernelSpec")
    # one block per kernel (a table of long lists does not fit 80 columns); lists wrap under
    # their label
    console = terminal.console()
    for name in sorted(specs):
        spec = specs[name]
        console.print(Text(name, style="bold"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True)
        grid.add_column()
        variants = ", ".join(v + ("*" if baseline else "") for v, baseline in spec.variants)
        grid.add_row("  variants", Text(f"{variants}  (* = baseline)"))
        grid.add_row("  dtypes", Text(", ".join(spec.dtypes)))
        grid.add_row("  shapes", Text(", ".join(format_shape(s) for s in spec.shapes)))
        console.print(grid)


# ---- show ----


def runs_root(profiles: str | None, *refs: str | None) -> Path:
    """The folder a reading command resolves runs in: --profiles, else profiles/; while profiles/
    holds no run, the example run shipped with profkit, said on stderr (stdout stays the output).
    Refs that are all paths (a run directory or a report) need no folder: no note then."""
    from profkit import store

    def named_path(ref: str | None) -> bool:
        return bool(ref) and (Path(ref).exists() or ref.endswith((".ncu-rep", ".ncu-rep.xz")))

    root, example = store.reading_root(Path(profiles) if profiles else None)
    if example and not (refs and all(named_path(r) for r in refs)):
        # two lines that fit 80 columns (its folder is profkit/examples/, as the README says)
        mine = f"{store.default_root()}/"
        click.echo(
            f"note: no runs under {mine} yet: reading the example run shipped with profkit\n"
            f"      (an H200 capture); `profkit capture KERNEL` stores yours under {mine}",
            err=True,
        )
    return root


def load_run(ref: str | None, root: Path, force: bool = False):
    """A stored run by path or id, or the newest, under root (see runs_root); a damaged one is
    refused unless force, and then every line of its damage is said on stderr."""
    from profkit import store

    run = store.load(store.resolve(ref, root), force=force)
    for warning in run.warnings:
        click.echo(f"warning: {warning}", err=True)
    for problem in run.damage:
        click.echo(f"warning: DAMAGED run {run.run_id}, read with --force: {problem}", err=True)
    return run


def damage_line(run) -> str | None:
    """The mark a forced read of a damaged run carries in the output itself."""
    if not run.damage:
        return None
    return f"DAMAGED RUN (read with --force, what survives): {'; '.join(run.damage)}"


def marked(df, *runs):
    """A table for csv or json with a `damaged` column on every row when a run it comes from was
    read damaged (--force): a script reading the output sees it, not only stderr."""
    lines = [f"{r.run_id}: {damage_line(r)}" for r in runs if damage_line(r)]
    return df.assign(damaged=" | ".join(lines)) if lines else df


def load_any(ref: str | None, root: Path, force: bool = False):
    """A stored run (path, id, or newest) or a .ncu-rep report -> ('run' or 'report', object)."""
    if ref and (ref.endswith((".ncu-rep", ".ncu-rep.xz")) or Path(ref).is_file()):
        from profkit.counters.ncu_rep import read_report

        if not Path(ref).is_file():
            raise ProfkitError(f"no such report: {ref}")
        return "report", read_report(Path(ref))
    return "run", load_run(ref, root, force)


PROFILES_HELP = "the folder runs are stored in [default: $PROFKIT_PROFILES, else profiles/]"
FORCE_HELP = "read a damaged run anyway: what survives, marked DAMAGED (default: refuse it)"


@cli.command()
@click.argument("ref", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="a table that fits the screen, or every column as csv or json",
)
@click.option("--profiles", type=click.Path(file_okay=False), default=None, help=PROFILES_HELP)
@click.option(
    "--lines",
    is_flag=True,
    help="the per-source-line table instead (a run captured with --source, or a report with "
    "SourceCounters)",
)
@click.option("--force", is_flag=True, help=FORCE_HELP)
def show(ref, fmt, profiles, lines, force) -> None:
    """Print a run's case table (default: the newest run), or a .ncu-rep's kernel launches."""
    root = runs_root(profiles, ref)
    what, obj = load_any(ref, root, force)
    if lines:
        table = obj.source_lines
        if table is None or table.empty:
            from profkit.explain.hotlines import NOT_MEASURED

            raise ProfkitError(f"no source lines in this {what}: {NOT_MEASURED}")
        if fmt == "table":  # a screen: the file's name and the line's first 40 characters
            table = table.assign(
                file=table["file"].map(lambda f: Path(f).name if f else ""),
                source=table["source"].map(lambda t: t if len(t) <= 40 else t[:39] + "…"),
            )
        _print_table(marked(table, obj) if what == "run" else table, fmt, LINE_COLUMNS, LINE_KEEP)
        return
    if what == "report":
        launches = obj.kernels
        if fmt == "table" and "nvtx_range" in launches:
            # profkit's own domain prefix says nothing at 80 columns; the case name does
            launches = launches.assign(
                nvtx_range=launches["nvtx_range"].map(
                    lambda v: v.removeprefix("profkit@").rstrip("/") if isinstance(v, str) else v
                )
            )
        _print_table(launches, fmt, LAUNCH_COLUMNS, LAUNCH_KEEP)
        return
    if fmt == "table":
        m = obj.manifest
        fp, ceil, ctr = m.get("fingerprint", {}), m.get("ceilings", {}), m.get("counters", {})
        where = (
            "interpret run (correctness only, nothing timed)"
            if obj.interpret
            else f"on {fp.get('gpu', 'no GPU')}"
        )
        lines = [f"run {obj.run_id}: {m.get('kernel')} {where} ({m.get('created', '?')})"]
        if ceil:
            lines.append(
                f"ceilings: copy {ceil['copy_gbps']:.0f} GB/s, bf16 matmul "
                f"{ceil['matmul_tflops']:.0f} TFLOP/s"
            )
        reason = f" ({ctr['reason']})" if ctr.get("reason") else ""
        lines.append(f"counters: {ctr.get('status', '?')}{reason}")
        lines.append(_integrity_line(obj))
        console = terminal.console()
        for line in lines:  # wrapped to the terminal's width
            console.print(Text(line))
    _print_table(marked(obj.cases, obj), fmt, SHOW_COLUMNS, SHOW_KEEP)


def _integrity_line(run) -> str:
    if run.damage:
        return damage_line(run)
    if run.verified:
        from profkit.store import MANIFEST_SHA

        files = run.manifest.get("files") or {}
        itself = (
            ", and the manifest against its own"
            if MANIFEST_SHA in run.manifest
            else " (the manifest itself unverified: stored before manifests carried a checksum)"
        )
        return f"files: {len(files)} verified against the manifest's checksums{itself}"
    return "files: unverified (stored before runs carried checksums)"


def _print_table(df, fmt: str, columns: dict[str, str], keep: tuple[str, ...] = ()) -> None:
    if fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
        return
    if fmt == "json":
        records = df.astype(object).where(df.notna(), None).to_dict(orient="records")
        click.echo(json.dumps(records, indent=1))
        return
    cols = [c for c in columns if c in df.columns and df[c].notna().any()]
    console = terminal.console()
    rows = [[_cell(v) for v in row] for row in df[cols].itertuples(index=False)]

    def build(kept: list[str], kept_rows: list[list[object]]) -> Table:
        table = Table(*(columns[c] for c in kept))
        for row in kept_rows:
            table.add_row(*(Text(str(v)) for v in row))  # Text: a name may hold "[...]"
        return table

    table, dropped = terminal.fit_columns(cols, rows, console.width, keep, build)
    console.print(table)
    if dropped:
        note = terminal.dropped_note(
            [columns[c] for c in dropped], console.width, "--format csv has them all"
        )
        console.print(Text(note, style="dim"))


def _cell(value) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))  # counts stored as floats because the column may be empty
        return f"{value:.4g}"
    return str(value)


# ---- doctor ----


@cli.command(epilog=doctor_help.EXIT_HELP)
@click.option("--no-probe", is_flag=True, help="skip the tiny ncu probe run")
@click.option(
    "--timeout",
    type=float,
    default=ncu_limits.PROBE_TIMEOUT_S,
    show_default=True,
    callback=_positive_seconds,
    help="seconds the ncu probe may run (`ncu --version`: at most 10)",
)
def doctor(no_probe, timeout) -> int:
    """Report the GPU, driver, versions, what is missing, and whether counters can be read."""
    from profkit.doctor import check_setup

    progress = terminal.console(stderr=True)
    found = check_setup(
        probe=not no_probe, timeout_s=timeout, say=lambda line: progress.print(Text(line))
    )
    console = terminal.console()
    table = Table("check", "status", "detail")
    table.columns[0].no_wrap = table.columns[1].no_wrap = True
    table.columns[2].overflow = "fold"  # a long path breaks across lines, never cut short
    for name, ok, detail in found.rows:
        status = {True: "[green]ok[/]", False: "[red]no[/]", None: "[yellow]?[/]"}[ok]
        table.add_row(name, status, Text(detail))
    console.print(table)
    console.print(Text(found.verdict))
    console.print(Text(f"exit status {found.exit_status} (see `profkit doctor --help`)"))
    return found.exit_status


# ---- explain / compare ----


def _what_is_there(report) -> str:
    """The run's own variant names and one of its case names, for a --case/--variant miss."""
    cases = [f for f in report if f.variant and f.dtype and f.shape]
    if not cases:
        return "this report has no named cases"
    variants = ", ".join(dict.fromkeys(f.variant for f in cases))
    example = f"{cases[0].variant} {cases[0].dtype} {cases[0].shape}"
    return f"its variants are {variants}; cases are named like '{example}'"


@cli.command()
@click.argument("ref", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "markdown", "json"]),
    default="terminal",
    show_default=True,
    help="for the screen, markdown (a PR comment) or json (docs/explain-schema.md)",
)
@click.option("--profiles", type=click.Path(file_okay=False), default=None, help=PROFILES_HELP)
@click.option("--case", "case", default=None, help="full detail for cases matching these words")
@click.option("--variant", "variant", default=None, help="full detail for one variant's cases")
@click.option("--verbose", "-v", is_flag=True, help="every finding, with NVIDIA's rule text")
@click.option(
    "--history",
    "history",
    multiple=True,
    help="earlier runs to compare with [default: the kernel's earlier runs beside this one]",
)
@click.option("--force", is_flag=True, help=FORCE_HELP)
def explain(ref, fmt, profiles, case, variant, verbose, history, force) -> None:
    """Findings, bottlenecks and verdicts for a run (default: the newest) or a .ncu-rep report."""
    from profkit import explain as ex
    from profkit import run_kinds
    from profkit.explain import hotlines, render
    from profkit.store import TUNE

    root = runs_root(profiles, ref)
    what, obj = load_any(ref, root, force)
    if what == "report":
        report = ex.explain_launches(obj.kernels, obj.rules)
        hot = hotlines.for_report(obj.kernels, obj.source_lines)
    else:
        earlier = [_history_run(obj, h, root, force) for h in history] if history else None
        said = len(obj.warnings)
        report = run_kinds.for_run(obj, earlier)
        for warning in obj.warnings[said:]:  # an earlier run left out of the history
            click.echo(f"warning: {warning}", err=True)
        hot = hotlines.for_run(obj)
        if damage_line(obj) and fmt != "json":
            click.echo(damage_line(obj))
        if obj.kind == TUNE and fmt != "json":
            from profkit.tune.command import run_summary

            click.echo(run_summary(obj))  # the path and the winner, before each case's finding
    for option, value in (("case", case), ("variant", variant)):
        if value is not None and not value.strip():  # "" would select nothing, and say nothing
            raise ProfkitError(f"--{option} {value!r} names no {option}: {_what_is_there(report)}")
    if (case or variant) and not render.select(report, case, variant):
        wanted = " and ".join(f"{k} {v!r}" for k, v in (("case", case), ("variant", variant)) if v)
        raise ProfkitError(f"no finding matches {wanted}: {_what_is_there(report)}")
    if fmt == "json":
        damaged = damage_line(obj) if what == "run" else None
        out = render.to_json(report, hot, damaged=damaged)
        if what == "run" and obj.kind == TUNE:
            from profkit.tune.loop import tune_record

            out = json.dumps({**json.loads(out), "tune": tune_record(obj)}, indent=2, default=str)
        click.echo(out)
    elif fmt == "markdown":
        click.echo(render.to_markdown(report, verbose=verbose, hot=hot))
    else:
        render.render_terminal(
            report, Console(), verbose=verbose, case=case, variant=variant, hot=hot
        )


def _history_run(run, ref: str, root: Path, force: bool):
    """An earlier run named by --history: a timed run of the same kernel, else a one-line error
    (a run of another kernel has no history with this one: it would be dropped silently)."""
    earlier = load_run(ref, root, force)
    kernel, theirs = run.manifest.get("kernel"), earlier.manifest.get("kernel")
    if theirs != kernel:
        raise ProfkitError(
            f"--history {ref}: {earlier.run_id} is a run of {theirs!r}, not of {kernel!r}; "
            f"name earlier runs of {kernel}"
        )
    if earlier.interpret:
        raise ProfkitError(f"--history {ref}: {earlier.run_id} is an interpret run (untimed)")
    if earlier.path.resolve() == run.path.resolve():
        raise ProfkitError(f"--history {ref}: that is the run being explained")
    return earlier


@cli.command(epilog=exitcodes.HELP)
@click.argument("run_a")
@click.argument("run_b")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "markdown", "json", "csv"]),
    default="terminal",
    show_default=True,
    help="for the screen, markdown (a PR comment), json or csv",
)
@click.option("--profiles", type=click.Path(file_okay=False), default=None, help=PROFILES_HELP)
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(["slower"]),
    default=None,
    help=f"exit {exitcodes.SLOWER} when a case of B is significantly slower than in A (its 95% "
    "interval excludes 1 and the gap clears the practical floor)",
)
@click.option("--force", is_flag=True, help=FORCE_HELP)
@click.option("--across-gpus", is_flag=True, help="compare cases timed on different GPU models")
def compare(run_a, run_b, fmt, profiles, fail_on, force, across_gpus) -> int:
    """The same cases of two runs side by side; changes beyond the timing spread are flagged."""
    from profkit import compare as cmp

    root = runs_root(profiles, run_a, run_b)
    a, b = load_run(run_a, root, force), load_run(run_b, root, force)
    df = cmp.compare_runs(a, b, across_gpus=across_gpus)
    if not df.attrs["in_both"]:
        sides = [
            f"{side} ({r.run_id}) is {'an interpret run' if r.interpret else 'a run'} of "
            f"{r.manifest.get('kernel')!r} ({len(r.cases)} cases)"
            for side, r in (("A", a), ("B", b))
        ]
        raise ProfkitError(f"no case in common: {sides[0]}, {sides[1]}")
    for side, run in (("A", a), ("B", b)):
        if run.interpret:
            click.echo(
                f"warning: {side} ({run.run_id}) is an interpret run: correctness only, "
                "no times to compare",
                err=True,
            )
    for side, run in (("A", a), ("B", b)):
        if damage_line(run) and fmt in ("terminal", "markdown"):
            click.echo(f"{side}: {damage_line(run)}")
    if fmt == "terminal":
        cmp.render_terminal(df, terminal.console())
    elif fmt == "markdown":
        click.echo(cmp.to_markdown(df))
    else:
        click.echo({"json": cmp.to_json, "csv": cmp.to_csv}[fmt](marked(df, a, b)))
    slower = df[df["flag"] == "slower"]
    if fail_on == "slower" and not slower.empty:
        click.echo(
            f"{len(slower)} case(s) significantly slower in B (exit status {exitcodes.SLOWER})",
            err=True,
        )
        return exitcodes.SLOWER
    return exitcodes.OK


# ---- dashboard ----


@cli.command()
@click.argument("refs", nargs=-1)
@click.option("--kernel", "kernels", multiple=True, help="add KERNEL's newest run (repeatable)")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="the HTML file to write [default: dashboards/RUN_ID.html]",
)
@click.option("--profiles", type=click.Path(file_okay=False), default=None, help=PROFILES_HELP)
@click.option("--inline", is_flag=True, help="embed plotly.js instead of sharing plotly.min.js")
@click.option("--force", is_flag=True, help=FORCE_HELP)
def dashboard(refs, kernels, out, profiles, inline, force) -> None:
    """Write one offline HTML page of runs (default: the newest; several: one page for a PR)."""
    from profkit.dashboard import default_path, stored_runs
    from profkit.run_kinds import write_dashboard

    root = runs_root(profiles, *(() if kernels else refs))  # a kernel's newest needs the folder
    # the page's own runs first, as show and explain read them (a damaged one refused, or read
    # with --force and said once); then the others, for the history
    runs = [load_run(ref, root, force) for ref in refs]
    runs += [load_run(k, root, force) for k in kernels]  # a kernel's newest, as show reads it
    runs = runs or [load_run(None, root, force)]
    stored, unreadable = stored_runs(root, loaded=runs)
    said = {f"left out of the history: {problem}" for problem in unreadable}
    for line in sorted(said):
        click.echo(f"warning: {line}", err=True)
    before = [len(run.warnings) for run in runs]
    path = Path(out) if out else default_path(runs)
    path = write_dashboard(runs, path, stored, plotlyjs="inline" if inline else "shared")
    for run, n in zip(runs, before, strict=True):  # earlier runs explain left out, said once
        for warning in dict.fromkeys(run.warnings[n:]):
            if warning not in said:
                said.add(warning)
                click.echo(f"warning: {warning}", err=True)
    click.echo(f"wrote {path}")
