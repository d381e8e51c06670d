"""`profkit tune`'s work behind the command line: the case, the grid, the loop, the summary."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from profkit.errors import ProfkitError
from profkit.tune.space import describe


def parse_set(items: tuple[str, ...]) -> dict[str, tuple]:
    """--set NAME=V1,V2 -> {NAME: (V1, V2)}; integers where they read as integers."""
    out: dict[str, tuple] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name or not values:
            raise ProfkitError(f"--set {item!r}: write it as NAME=V1,V2 (e.g. num_warps=4,8)")
        out[name] = tuple(int(v) if v.lstrip("-").isdigit() else v for v in values.split(","))
    return out


def tune_command(
    kernel: str,
    variant: str | None,
    shape: str | None,
    dtype: str | None,
    budget: int | None,
    restrict: tuple[str, ...],
    from_file: str | None,
    out: str | None,
    interpret: bool,
    cluster: str | None,
    workers: int | None,
    seed: int,
    ncu_timeout: float,
):
    """Tune, print the run's summary; returns the stored run."""
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"  # before the kernel's module imports triton
    from profkit import store
    from profkit.capture import CaptureOptions, check_shapes
    from profkit.spec import find_spec, format_shape, normalize_dtype, parse_shape
    from profkit.tune.loop import TuneOptions, default_budget, run_tune
    from profkit.tune.space import space_of, tunable_variant

    spec = find_spec(kernel, from_file)
    v = tunable_variant(spec, variant)
    dt = normalize_dtype(spec, dtype) if dtype else spec.dtypes[0]
    if shape:
        case_shape = parse_shape(shape)
    else:
        case_shape = spec.interpret_shapes[0] if interpret else spec.shapes[0]
    # the shape checked as capture checks it (rank, bytes model, memory), before any word of work
    check_shapes(spec, CaptureOptions((dt,), (case_shape,), (v.name,), Path("."), interpret))
    space = space_of(spec, v, case_shape, dt, parse_set(restrict))
    if not interpret and not cluster:
        import torch

        if not torch.cuda.is_available():
            raise ProfkitError("no CUDA GPU here: tune needs one (--interpret checks correctness)")
    if workers and cluster != "local":
        raise ProfkitError("--workers sets the size of a --cluster local")
    opts = TuneOptions(
        dtype=dt,
        shape=case_shape,
        root=Path(out) if out else store.default_root(),
        budget=budget or default_budget(space),
        interpret=interpret,
        from_file=from_file,
        seed=seed,
        ncu_timeout_s=ncu_timeout,
        cluster=cluster,
        workers=workers,
    )
    click.echo(
        f"tune {spec.name} {v.name} at {dt} {format_shape(case_shape)}: grid of {space.size}, "
        f"budget {opts.budget}; shipped {space.name(space.shipped)}",
        err=True,
    )
    path = run_tune(spec, space, opts)
    run = store.load(path)
    click.echo(run_summary(run))
    click.echo(f"stored {path}")
    return run


def run_summary(run) -> str:
    """The tune run in a few lines: each configuration, the step that proposed it, the winner."""
    from profkit.tune.loop import tune_record

    record = tune_record(run) or {}
    lines = [f"tune {run.run_id}: {record['space']['kernel']} {record['space']['variant']}"]
    cases = run.cases
    for _, r in cases.sort_values(["round", "variant"]).iterrows():
        ms = r.get("device_p50_ms")
        timed = f"{ms * 1e3:9.2f} us" if ms == ms and ms is not None else "   untimed  "
        ok = "ok " if bool(r.get("correct")) else "WRONG"
        if r.get("action") in ("shipped", "grid"):
            step = str(r.get("action"))
        else:
            step = f"{r.get('action')} for {r.get('answers')}: {r.get('move')} from " + str(
                r.get("proposed_from")
            )
        params = describe(json.loads(r["params"]))
        vs = (record.get("vs_shipped") or {}).get(str(r["variant"]))
        against = f" {vs['ratio']:.3f}x shipped ({vs['outcome']})" if vs else ""
        lines.append(f"  r{int(r['round'])} {r['variant']} {timed} {ok}{against} {params} [{step}]")
    lines.append(f"stopped: {record.get('stop')}")
    if record.get("why"):
        lines.append(f"winner {record.get('winner')}: {record['why']}")
    lines.append(f"measured {record.get('measured')} of a grid of {record['space']['size']}")
    return "\n".join(lines)
