"""Decode-step lab on the H200 (issue 11): every variant checked, >= 1000 timed steps each, probes,
counters for the kernels of one step; stored as one profkit run under --out.

    python3 jobs/decode_capture.py --out DIR     # on the H200: jobs/decode.toml runs this

(nvtx must be importable for the counter pass: it runs profkit.ncu_program under ncu, as every
capture does, over the eager and fused steps at --counter-shape; --no-counters skips it,
--ncu-timeout caps it: about 60 launches, predicted 60-180 s, so 150-270 s in all.) Sweep:
batch 1, 8, 64 x cache
512, 2048, 8192 for the fixed-shape variants (eager, fused, graph, graph_fused, piecewise) and a
dynamic run (batch changing every step in a random walk over 8..32 rows, graphs for buckets 1, 2,
4, 8, 16, 24, 32, cache 2048), twice: "dynamic" with the eager kernels and "dynamic_fused" with
the lab's fused RMSNorm and decode attention (same walk, lengths, buckets; manifest sections
"dynamic" and "dynamic_fused"). Cases at --probe-caches (512, 2048) and the dynamic ones are timed
a second time with probes (device events between stages) to place the p95 tail. Prints a table and
the issue's goals as pass/fail last.
A measured upper bound for a synthetic step, not an end-to-end serving claim.
"""

from __future__ import annotations

import argparse
import importlib
import lzma
import os
import random
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

NOTE = "a measured upper bound for a synthetic decode step, not an end-to-end serving claim"
GOAL_GRAPH_SPEEDUP = 2.3  # issue 11: graph >= 2.3x faster than eager at p50, batch 1
GOAL_DYNAMIC_TAIL = 1.2  # issue 11: dynamic replay p95/p50 <= 1.2
DYNAMIC = {"eager": "dynamic", "fused": "dynamic_fused"}  # kernels -> the dynamic case's variant


def ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "profiles"), help="runs are stored here")
    p.add_argument("--steps", type=int, default=1000, help="timed steps per case (>= 1000)")
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    p.add_argument("--batches", type=ints, default=(1, 8, 64))
    p.add_argument("--caches", type=ints, default=(512, 2048, 8192))
    p.add_argument("--dynamic-cache", type=int, default=2048)
    p.add_argument("--walk", type=ints, default=(8, 32), help="dynamic batch range LO,HI")
    p.add_argument(
        "--copy-in",
        default="device",
        choices=("device", "pinned", "pageable"),
        help="dynamic's input: already on the GPU (as in the stored runs), or on the host, "
        "copied through a pinned buffer (non_blocking) or straight from pageable memory",
    )
    p.add_argument("--no-probes", action="store_true")
    p.add_argument(
        "--probe-caches",
        type=ints,
        default=(512, 2048),
        help="cache lengths whose fixed-shape cases get a probed run (the dynamic one always)",
    )
    p.add_argument("--no-counters", action="store_true")
    p.add_argument("--counter-shape", type=ints, default=(1, 2048), help="BATCH,CACHE for ncu")
    p.add_argument(
        "--counter-variants",
        default="eager,fused",
        help="variants profiled under ncu (each step ~20-40 launches, a few seconds each)",
    )
    p.add_argument(
        "--ncu-timeout",
        type=float,
        default=180.0,
        help="seconds before ncu is stopped (the run is then stored as timing only)",
    )
    # the CPU tests' path to the counter pass (a fake ncu on PATH runs no program)
    p.add_argument("--cpu-counters", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0)
    # the CPU path (tests): tiny layer, no capture (the graph variants run their step eagerly),
    # host-clock timing, no counters
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)
    args = p.parse_args()
    args.counter_variants = tuple(v for v in args.counter_variants.split(",") if v)
    if args.device == "cpu":
        args.no_counters = args.no_counters or not args.cpu_counters
    elif args.steps < 1000:
        p.error("--steps must be >= 1000 (the issue asks for at least a thousand per variant)")
    if len(args.walk) != 2 or not args.walk[0] < args.walk[1]:
        p.error("--walk takes LO,HI with LO < HI")
    if args.warmup > args.steps:
        p.error("--warmup must not exceed --steps")
    if len(args.counter_shape) != 2:
        p.error("--counter-shape takes BATCH,CACHE")
    batch, cache = args.counter_shape
    if not args.no_counters and (batch not in args.batches or cache not in args.caches):
        # counters join to the timed case of the same name: a shape outside the sweep joins nothing
        p.error(f"--counter-shape {batch},{cache} is not in the sweep (--batches x --caches)")
    # the worker runs the spec's variants: the captured ones exist only in bench's own runners
    unknown = [v for v in args.counter_variants if v not in ("eager", "fused")]
    if unknown or not args.counter_variants:
        p.error(f"--counter-variants takes eager and/or fused, got {args.counter_variants}")
    return args


def main() -> int:
    args = parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # the fused RMSNorm through Triton's interpreter
    import torch

    if args.device == "cpu":
        torch.set_num_threads(1)  # tiny ops: a thread pool only contends on a shared CPU
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA GPU here: this script times CUDA graph replay on the GPU")
        return 2
    from rich.console import Console

    from profkit import hostenv, store
    from profkit.spec import lab_specs

    spec = lab_specs()["decode"]
    dec = importlib.import_module("profkit_lab.decode")
    console = Console(stderr=True)
    t_start = time.perf_counter()
    try:
        writer = store.RunWriter(Path(args.out), "decode")
    except OSError as exc:
        print(f"error: cannot store a run under {args.out}: {exc}")
        return 1
    try:
        fingerprint = hostenv.fingerprint()
        ceilings = hostenv.measure_ceilings() if args.device == "cuda" else {}
        lab = Lab(args, spec, dec, ceilings)
        for cache_len in args.caches:
            for batch in args.batches:
                lab.fixed_case(batch, cache_len)
                lab.free()  # the case's cache and graphs
        dynamic = lab.dynamic_case()
        lab.free()
        dynamic_fused = lab.dynamic_case("fused")
        lab.free()
        counters, table = lab.counters(writer, console)
        # every reader needs these columns, even when no case came out correct
        table = table.reindex(
            columns=[
                *table.columns,
                *(c for c in store.REQUIRED_CASE_COLUMNS if c not in table.columns),
            ]
        )
        writer.write_table(store.CASES, table)
        if lab.samples:
            writer.write_samples(pd.concat(lab.samples, ignore_index=True))
        _compress_report(writer, store.REPORT)
        manifest = {
            "kind": store.DECODE,
            "kernel": "decode",
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "note": NOTE,
            "source": spec.source,
            "command": " ".join(["python3", *sys.argv]),
            "options": {
                "dtypes": [args.dtype],
                "shapes": sorted({r["shape"] for r in lab.rows}),
                "variants": [*dec.FIXED, *DYNAMIC.values()],
                "steps": args.steps,
                "warmup": args.warmup,
                "seed": args.seed,
                "probes": not args.no_probes,
            },
            "mode": "gpu" if args.device == "cuda" else "cpu (no capture: graph variants eager)",
            "layer": {
                "hidden": lab.dims.hidden,
                "heads": lab.dims.heads,
                "intermediate": lab.dims.intermediate,
                "params": lab.dims.params,
            },
            "timing": {
                "method": "step latency: events around each step, synchronize after each step",
                "l2": "warm (consecutive steps, as a serving loop runs them)",
                "probes": "a second run of each case with device events between stages "
                "(external events inside graphs); samples kinds probe.<stage>, probe.device",
            },
            "dynamic": dynamic,
            "dynamic_fused": dynamic_fused,
            "fingerprint": fingerprint,
            "ceilings": ceilings,
            "counters": counters,
            "wall_s": round(time.perf_counter() - t_start, 1),
        }
        path = writer.finish(manifest)
    except BaseException:
        writer.abandon()
        raise
    report(table, {"dynamic": dynamic, "dynamic_fused": dynamic_fused}, counters, path)
    return 0


class Lab:
    def __init__(self, args, spec, dec, ceilings: dict):
        import torch

        self.args, self.spec, self.dec, self.ceilings = args, spec, dec, ceilings
        self.tol = spec.tolerances[args.dtype]
        self.device, self.capture = args.device, args.device == "cuda"
        self.dims = dec.LAYER if self.capture else dec.Dims(64, 4, 96)
        self.gen = torch.Generator(device=self.device).manual_seed(args.seed)
        self.weights = dec.make_weights(self.dims, args.dtype, self.device, self.gen)
        self.last_device_ms = None
        self.rows: list[dict] = []
        self.samples: list[pd.DataFrame] = []

    def identity(self, variant: str, shape: tuple[int, int]) -> dict:
        from profkit.spec import case_name, format_shape

        return {
            "kernel": "decode",
            "variant": variant,
            "baseline": variant == "eager",
            "dtype": self.args.dtype,
            "shape": format_shape(shape),
            "case": case_name("decode", variant, self.args.dtype, shape),
            "batch": shape[0],
            "cache_len": shape[1],
        }

    def fixed_case(self, batch: int, cache_len: int) -> None:
        from profkit.capture import rates
        from profkit.spec import DTYPE_ITEMSIZE

        dec = self.dec
        state = dec.make_state(self.dims, batch, cache_len, self.args.dtype, self.device, self.gen)
        inp = {**self.weights, **state}
        pick = sorted({0, batch - 1})
        shape = (batch, cache_len)
        # the spec's model is the full layer's: no rates for the CPU path's tiny one
        nbytes = self.spec.bytes_moved(shape, DTYPE_ITEMSIZE[self.args.dtype])
        flops = self.spec.flops(shape)
        if not self.capture:
            nbytes = flops = None
        for variant in dec.FIXED:
            ident = self.identity(variant, shape) | {"bytes": nbytes, "flops": flops}
            print(f"{ident['case']} ...", flush=True)
            row = self.measure(
                ident,
                lambda mark, v=variant: dec.build(v, inp, cache_len, self.capture, mark),
                lambda: dec.reference(dec.select_rows(inp, pick)),
                pick,
                external=variant not in ("eager", "fused"),
                probe=cache_len in self.args.probe_caches,
            )
            if "step_p50_ms" in row and nbytes:
                # rates over the step's latency: a lower bound on what the kernels reach
                row.update(rates(nbytes, flops, row["step_p50_ms"], self.ceilings))
            self.rows.append(row)

    def free(self) -> None:
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    def measure(
        self,
        ident: dict,
        build,
        reference,
        pick,
        external: bool,
        check=None,
        probe: bool = True,
        stages: tuple[str, ...] | None = None,
    ) -> dict:
        """Check (poisoned output, float64 reference), time, then time again with probes."""
        from profkit.measure import iteration_latency

        try:
            call = build(self.dec._no_mark)
            verdict = (
                check()
                if check
                else iteration_latency.check_iteration(lambda: call(0), reference, pick, self.tol)
            )
        except Exception as exc:  # a capture that fails is this case's result, not the sweep's end
            why = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            verdict = {"correct": False, "rel_err": None, "max_abs_err": None, "error": why}
        row = {**ident, **verdict}
        if not verdict["correct"]:
            print(f"  INCORRECT: {verdict['error']}", flush=True)
            return row
        s = iteration_latency.run_iterations(
            call, self.args.steps, self.args.warmup, device=self.device
        )
        row = iteration_latency.case_row(row, s)
        self.samples.append(iteration_latency.samples_frame(ident["case"], s))
        self.last_device_ms = s.device_ms
        call = None  # release the graphs before the probed copy is captured
        if probe and not self.args.no_probes:
            row.update(self.probe(ident, build, external, stages or self.dec.STAGES))
        self.free()
        return row

    def probe(self, ident: dict, build, external: bool, stages) -> dict:
        from profkit.measure import iteration_latency
        from profkit.stats import tail

        try:
            probes = iteration_latency.Probes(stages, external=external, device=self.device)
            call = build(probes.mark)
            s = iteration_latency.run_iterations(
                call, self.args.steps, self.args.warmup, probes, self.device
            )
        except Exception as exc:  # probes are optional: the plain timing stands without them
            why = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            print(f"  probes failed: {why}", flush=True)
            return {"probe_note": f"probes failed: {why}"}
        frame = iteration_latency.samples_frame(ident["case"], s, probe_prefix="")
        frame["kind"] = "probe." + frame["kind"]  # probe.device, probe.host, probe.<stage>
        self.samples.append(frame[frame.kind != "probe.host"])
        ranked = tail.attribute_tail(s.device_ms, s.probes)
        top, excess = ranked[0]
        in_tail = tail.tail_iterations(s.device_ms)
        return {
            "probe_p50_ms": float(np.median(s.device_ms)),
            "tail_stage": top,
            "tail_stage_excess_ms": excess,
            "tail_excess_ms": float(s.device_ms[in_tail].mean() - np.median(s.device_ms)),
            "probe_note": "; ".join(f"{k} {v * 1e3:+.1f}us" for k, v in ranked[:3]),
        }

    def dynamic_case(self, kernels: str = "eager") -> dict:
        """The dynamic walk with the eager or the fused kernels (dec.KERNELS), as its own case;
        returns the manifest section of the same name."""
        import torch

        from profkit.measure import iteration_latency
        from profkit.stats import tail

        dec, args = self.dec, self.args
        lo, hi = args.walk
        cache_len = args.dynamic_cache
        buckets = dec.default_buckets(hi)
        rows = max(buckets)
        rng = random.Random(args.seed)
        lengths = [rng.randint(cache_len // 2, cache_len) for _ in range(rows)]  # ragged
        state = dec.make_state(
            self.dims, rows, cache_len, args.dtype, self.device, self.gen, lengths
        )
        inp = {**self.weights, **state}
        x_pool = torch.randn(rows, self.dims.hidden, generator=self.gen, device=self.device)
        x_pool = x_pool.to(getattr(torch, args.dtype))
        if args.copy_in != "device":
            x_pool = x_pool.cpu()  # pageable host memory; the runner's copy_in says how it goes
        # run_iterations calls 0..warmup-1 untimed, then 0..steps-1 timed: one walk serves both
        timed = walk = dec.batch_walk(args.steps, lo, hi, seed=args.seed)
        ident = self.identity(DYNAMIC[kernels], (hi, cache_len))
        copy_in = "pinned" if args.copy_in == "device" else args.copy_in  # "device": unused
        print(f"{ident['case']} (batch {lo}..{hi}, buckets {buckets}) ...", flush=True)

        def build(mark):
            runner = dec.DynamicRunner(inp, buckets, self.capture, kernels, mark, copy_in)
            return lambda i: runner(x_pool[: walk[i]])

        def check() -> dict:
            runner = dec.DynamicRunner(inp, buckets, self.capture, kernels, copy_in=copy_in)
            ref_inp = {**inp, "x": x_pool.to(self.device)}
            for n in sorted({lo, (lo + hi) // 2, hi, 1}):
                pick = sorted({0, n - 1})
                v = iteration_latency.check_iteration(
                    lambda n=n: runner(x_pool[:n]),
                    lambda pick=pick: dec.reference(dec.select_rows(ref_inp, pick)),
                    pick,
                    self.tol,
                )
                if not v["correct"]:
                    return v | {"error": f"batch {n}: {v['error']}"}
            return v

        stages = ("copy_in", *dec.STAGES)
        row = self.measure(ident, build, None, None, True, check=check, stages=stages)
        bucket_of = [dec.choose_bucket(n, buckets) for n in timed]
        waste = [dec.padding_waste(n, b) for n, b in zip(timed, bucket_of, strict=True)]
        row.update(
            copy_in=args.copy_in,
            batch_lo=lo,
            batch_hi=hi,
            buckets=",".join(map(str, buckets)),
            pad_waste_mean=float(np.mean(waste)),
        )
        info = {
            "cache_len": cache_len,
            "lengths": lengths,
            "buckets": list(buckets),
            "batches": timed,
            "walk": {"lo": lo, "hi": hi, "seed": args.seed, "jump": 3},
            "pad_waste_mean": float(np.mean(waste)),
            "copy_in": args.copy_in,
            "kernels": kernels,
        }
        if "step_p50_ms" in row:
            device = self.last_device_ms
            by = tail.tail_by(device, bucket_of)
            # each step over its own bucket's median: what is left once the work's size is out
            medians = by.set_index("label").p50_ms
            rel = device / np.array([medians[b] for b in bucket_of])
            row["within_bucket_p95_over_p50"] = float(np.percentile(rel, 95) / np.median(rel))
            info["tail_by_bucket"] = by.to_dict(orient="records")
            info["within_bucket_p95_over_p50"] = row["within_bucket_p95_over_p50"]
            # the inherent mix (every step at its bucket's median) and the probed tail's stages
            # against their own bucket's stage medians, from the samples just stored
            mine = pd.concat(self.samples, ignore_index=True)
            info.update(tail.dynamic_tail(mine, ident["case"], timed, buckets))
            row["inherent_mix_p95_over_p50"] = info.get("inherent_mix_p95_over_p50")
        self.rows.append(row)
        return info

    def counters(self, writer, console) -> tuple[dict, pd.DataFrame]:
        """ncu over the kernels of one step (eager and fused variants), through profkit's own
        counter pass (profkit.ncu_program under ncu), joined to the rows of the same cases."""
        from profkit.capture import CaptureOptions, counter_pass
        from profkit.counters.join import aggregate_cases, join
        from profkit.spec import format_shape

        table = pd.DataFrame(self.rows)
        if self.args.no_counters:
            return {"status": "skipped", "reason": "--no-counters: timing only"}, join(table, None)
        shape = tuple(self.args.counter_shape)
        opts = CaptureOptions(
            dtypes=(self.args.dtype,),
            shapes=(shape,),
            variants=self.args.counter_variants,
            root=Path(self.args.out),
            seed=self.args.seed,
            ncu_timeout_s=self.args.ncu_timeout,
        )
        # the timed rows of those cases: counter_pass profiles only the correct ones, and their
        # case names (profkit.spec.case_name, the worker's NVTX ranges) are the join key
        todo = table[
            table.variant.isin(opts.variants) & (table["shape"] == format_shape(shape))
        ].reindex(columns=["variant", "dtype", "shape", "correct"])
        block, kernels = counter_pass(self.spec, opts, todo, writer, console)
        if block.get("status") == "ok":
            writer.path("ncu.log").unlink(missing_ok=True)  # kept only to explain a failure
        return block, join(table, aggregate_cases(kernels) if kernels is not None else None)


def _compress_report(writer, name: str) -> None:
    raw = writer.path(name)
    if raw.is_file():
        with raw.open("rb") as src, lzma.open(writer.path(name + ".xz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        raw.unlink()


def report(table: pd.DataFrame, dynamics: dict, counters: dict, path: Path) -> None:
    """dynamics: the manifest's dynamic sections by variant (dynamic, dynamic_fused)."""
    cols = [
        "variant",
        "batch",
        "cache_len",
        "correct",
        "step_p50_ms",
        "step_p95_ms",
        "step_p99_ms",
        "step_p95_over_p50",
        "host_us",
        "tail_stage",
    ]
    shown = table.reindex(columns=cols).copy()
    for c in ("step_p50_ms", "step_p95_ms", "step_p99_ms"):
        shown[c] = shown[c] * 1e3
    shown = shown.rename(
        columns={
            "step_p50_ms": "p50_us",
            "step_p95_ms": "p95_us",
            "step_p99_ms": "p99_us",
            "step_p95_over_p50": "p95/p50",
        }
    )
    print(f"\nstored {path}   ({NOTE})")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    for variant, dynamic in dynamics.items():
        if dynamic.get("tail_by_bucket"):
            print(f"\n{variant}: tail by bucket (step share, tail share, p50 us, p95/p50 within)")
            for r in dynamic["tail_by_bucket"]:
                print(
                    f"  bucket {r['label']:>3}: {r['step_share']:.2f} {r['tail_share']:.2f} "
                    f"{r['p50_ms'] * 1e3:8.1f} {r['p95_over_p50']:.3f}"
                )
        for split in dynamic.get("tail_split") or []:
            top = list(split["excess_ms"].items())[:3]
            print(
                f"  tail steps in bucket {split['bucket']} ({split['tail_steps']}) over their "
                "bucket's stage medians: " + ", ".join(f"{k} {v * 1e3:+.1f}us" for k, v in top)
            )
    launches = table.get("kernel_count", pd.Series(dtype=float)).dropna()
    print(
        f"\ncounters: {counters.get('status')}"
        + (f", {int(launches.sum())} launches in {len(launches)} cases" if len(launches) else "")
        + (f" ({counters.get('wall_s')} s)" if counters.get("wall_s") is not None else "")
        + (f": {counters['reason']}" if counters.get("reason") else "")
    )
    print("\ngoals (issue 11, batch 1):")
    p50 = table.set_index(["variant", "batch", "cache_len"])["step_p50_ms"]
    if not (table.batch == 1).any():
        print("  n/a graph vs eager and graph_fused vs graph: batch 1 is not in the sweep")
    for cache_len in sorted(table.loc[table.batch == 1, "cache_len"].unique()):
        key = (1, cache_len)
        try:
            eager, graph, fused = (p50[(v, *key)] for v in ("eager", "graph", "graph_fused"))
        except KeyError:
            continue
        speedup = eager / graph
        print(
            f"  {'PASS' if speedup >= GOAL_GRAPH_SPEEDUP else 'FAIL'} graph vs eager at "
            f"cache {cache_len}: {speedup:.2f}x (goal >= {GOAL_GRAPH_SPEEDUP}x)"
        )
        print(
            f"  {'PASS' if fused < graph else 'FAIL'} graph_fused faster than graph at cache "
            f"{cache_len}: {graph * 1e3:.1f} -> {fused * 1e3:.1f} us"
        )
    for variant in DYNAMIC.values():
        dyn = table[table.variant == variant]
        if dyn.empty or pd.isna(dyn.iloc[0].get("step_p95_over_p50")):
            continue
        r = dyn.iloc[0]
        ok = r.step_p95_over_p50 <= GOAL_DYNAMIC_TAIL
        print(
            f"  {'PASS' if ok else 'FAIL'} {variant} p95/p50 {r.step_p95_over_p50:.3f} "
            f"(goal <= {GOAL_DYNAMIC_TAIL}); within its bucket "
            f"{r.get('within_bucket_p95_over_p50', float('nan')):.3f}; inherent mix "
            f"{r.get('inherent_mix_p95_over_p50', float('nan')):.3f}; tail stage "
            f"{r.get('tail_stage', '?')}"
        )


if __name__ == "__main__":
    sys.exit(main())
