"""Run a user's Python program inside this process, under torch.profiler, and export its GPU
activity (profkit.workload.trace's format) to one gzipped JSON file.

    python -m profkit.workload.child --export OUT.json.gz -- SCRIPT.py ARGS
    python -m profkit.workload.child --no-profile -- -m MODULE ARGS   # as the counter pass does
    python -m profkit.workload.child --no-profile --emit-nvtx -- ...   # PyTorch ops as NVTX ranges
    python -m profkit.workload.child --pace OUT.json --step-range step -- SCRIPT.py ARGS
    python -m profkit.workload.child --no-profile --gate GATE.json -- ...  # the counter pass's gate

The program runs as `python SCRIPT.py ARGS` would (sys.argv, sys.path[0], __main__). NVTX ranges
(torch.cuda.nvtx, and the nvtx package's when it is installed) also open record_function ranges
here, so that the timing pass sees them as torch.profiler sees its own. The export is written even
when the program fails (its exit status is in it, for the parent to report); this process then
exits with the program's status. With --pace the program runs without the profiler and the host
clock is read where each step range opens and closes (profkit.workload.pace).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import inspect
import json
import os
import runpy
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

# what the child prints where it ends the program after the last gated call (_stop_program)
STOPPED = "profkit: the counter pass stopped the program after its last profiled call"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profkit.workload.child")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--export", type=Path, help="write the timing export here (.json.gz)")
    mode.add_argument("--no-profile", action="store_true", help="run the program plainly")
    mode.add_argument(
        "--pace", type=Path, help="run it plainly and write when each --step-range opened (.json)"
    )
    p.add_argument("--step-range", help="with --pace or --start-at-step: the range of one step")
    p.add_argument(
        "--start-at-step",
        type=int,
        help="with --no-profile: start the CUDA profiler (ncu --profile-from-start off) where "
        "the step range opens after this many steps",
    )
    p.add_argument(
        "--gate",
        type=Path,
        help="with --no-profile: start the CUDA profiler only during the aten op calls this file "
        "names (profkit.workload.counter_pass.write_gate)",
    )
    p.add_argument(
        "--emit-nvtx",
        action="store_true",
        help="with --no-profile: under torch.autograd.profiler.emit_nvtx (an NVTX range per op)",
    )
    p.add_argument("program", nargs=argparse.REMAINDER, help="-- SCRIPT ARGS, or -- -m MODULE ARGS")
    args = p.parse_args(argv)
    from profkit.workload import trace  # noqa: F401  (loaded before the path is handed back)
    from profkit.workload.program import restore_env

    restore_env()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        p.error("no program given")
    if args.pace is not None:
        if not args.step_range:
            p.error("--pace needs --step-range")
        return pace(program, args.pace, args.step_range)
    if args.start_at_step is not None:
        if not (args.no_profile and args.step_range):
            p.error("--start-at-step needs --no-profile and --step-range")
        _start_profiler_at(args.step_range, args.start_at_step)
    if args.gate is not None and not args.no_profile:
        p.error("--gate needs --no-profile")
    if args.no_profile:
        with contextlib.ExitStack() as stack:
            if args.emit_nvtx:
                import torch

                stack.enter_context(torch.autograd.profiler.emit_nvtx())
            if args.gate is not None:
                stack.enter_context(_gate(json.loads(args.gate.read_text())))
            return _run(program)[0]
    return profile(program, args.export)


def profile(program: list[str], export: Path) -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from profkit.workload.trace import export_from_trace

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    _nvtx_opens_ranges()
    # one cycle: acc_events (torch >= 2.4) only silences torch's warning that events of earlier
    # cycles are dropped
    extra = {"acc_events": True} if "acc_events" in inspect.signature(profile).parameters else {}
    with profile(activities=activities, record_shapes=True, **extra) as prof:
        status, wall_s = _run(program)
    fd, name = tempfile.mkstemp(prefix="profkit-trace-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(name)
        trace = json.loads(Path(name).read_text())
    finally:
        os.unlink(name)
    meta = {
        "program": program,
        "exit_status": status,
        "wall_s": round(wall_s, 6),
        "cuda": torch.cuda.is_available(),
        "torch": torch.__version__,
    }
    data = export_from_trace(trace, meta)
    tmp = export.with_name(export.name + ".part")
    with gzip.open(tmp, "wt") as f:
        json.dump(data, f)
    os.replace(tmp, export)
    return status


def pace(program: list[str], out: Path, step_range: str) -> int:
    """Run the program without the profiler; write the host clock (ns) at each open and close of
    step_range, its exit status and wall time."""
    from profkit.workload.pace import FORMAT

    opens: list[int] = []
    closes: list[int] = []

    def opened(name: str) -> str:
        if name == step_range:
            opens.append(time.perf_counter_ns())
        return name

    def closed(name: str) -> None:
        if name == step_range:
            closes.append(time.perf_counter_ns())

    _hook_ranges(opened, closed, record_functions=True)
    status, wall_s = _run(program)
    data = {"format": FORMAT, "step_range": step_range, "opens_ns": opens, "closes_ns": closes,
            "exit_status": status, "wall_s": round(wall_s, 6)}  # fmt: skip
    tmp = out.with_name(out.name + ".part")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, out)
    return status


def _start_profiler_at(step_range: str, skipped: int) -> None:
    """cudaProfilerStart where step_range opens the (skipped+1)th time: ncu, run with
    --profile-from-start off, counts its launches from the first measured step."""
    import torch

    opens = 0

    def opened(name: str) -> str:
        nonlocal opens
        if name == step_range:
            if opens == skipped:
                torch.cuda.profiler.start()
            opens += 1
        return name

    _hook_ranges(opened, lambda _: None, record_functions=True)


def _gate(spec: dict, finished: Callable[[], None] | None = None):
    """A dispatch mode, entered where the step range opens the (skipped+1)th time (before it, no
    aten call pays for a Python mode), that numbers aten op calls by name from there and runs
    the calls spec names between cudaProfilerStart and Stop. Modes follow the autograd engine
    onto its threads, so backward's calls are numbered too. With spec's "stop", the program ends
    once the last of those calls returns (`finished`, by default _stop_program): ncu profiles
    nothing after it, so the rest of the program is not run. -> a context for the program's run,
    which leaves the mode if it was entered."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from profkit.workload.trace import call_key

    wanted = {(str(name), int(n)) for name, n in spec["calls"]}
    left = set(wanted)
    if finished is None:
        finished = _stop_program
    counts: dict[str, int] = {}
    lock = threading.Lock()

    class Gate(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = call_key(func._schema.name)
            with lock:
                n = counts.get(name, 0)
                counts[name] = n + 1
            if (name, n) not in wanted:
                return func(*args, **kwargs)
            torch.cuda.profiler.start()
            try:
                return func(*args, **kwargs)
            finally:
                torch.cuda.profiler.stop()
                with lock:
                    left.discard((name, n))
                    done = not left
                if done and spec.get("stop"):
                    finished()

    gate, opens, entered = Gate(), [0], []

    def opened(name: str) -> str:
        if name == spec["step_range"]:
            if opens[0] == spec["skipped"]:
                gate.__enter__()
                entered.append(gate)
            opens[0] += 1
        return name

    _hook_ranges(opened, lambda _: None, record_functions=True)

    @contextlib.contextmanager
    def run():
        try:
            yield gate
        finally:
            if entered:
                gate.__exit__(None, None, None)

    return run()


def _stop_program() -> None:
    """End the program now, from whichever thread ran the last chosen call: its kernels are
    profiled (ncu replays a launch before the launch returns), so the steps after it and the
    teardown would only cost time. os._exit skips atexit and torch's teardown; status 0."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    sys.stdout.flush()
    sys.stderr.flush()
    print(STOPPED, file=sys.stderr, flush=True)
    os._exit(0)


def _run(program: list[str]) -> tuple[int, float]:
    """(exit status, wall seconds) of the program run as `python PROGRAM` would run it."""
    module = program[0] == "-m"
    target = program[1] if module else program[0]
    sys.argv = [target, *program[(2 if module else 1) :]]
    if not module:
        sys.path[0] = str(Path(target).resolve().parent)
    start = time.perf_counter()
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except KeyboardInterrupt:
        raise
    except BaseException:  # the program's own failure: reported as Python would report it
        traceback.print_exc()
        status = 1
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()  # its kernels belong to its run time, not after it
    return status, time.perf_counter() - start


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits 1
    return 1


def _nvtx_opens_ranges() -> None:
    """Make NVTX push/pop ranges open record_function ranges too, so that the profiler sees
    them as it sees its own."""
    from torch.autograd.profiler import record_function

    def opened(name: str) -> record_function:
        rf = record_function(name)
        rf.__enter__()
        return rf

    _hook_ranges(opened, lambda rf: rf.__exit__(None, None, None))


def _hook_ranges(
    on_open: Callable[[str], object],
    on_close: Callable[[object], None],
    record_functions: bool = False,
) -> None:
    """Call on_open(name) where an NVTX push/pop range opens (torch.cuda.nvtx, and the nvtx
    package's when installed) and on_close(what on_open returned) where it closes, per thread as
    NVTX's ranges are; with record_functions, torch's record_function ranges too (the profile
    mode makes NVTX ranges record_function ranges: there they would count twice)."""
    import torch

    stacks = threading.local()

    def opened(name: str) -> None:
        stacks.__dict__.setdefault("open", []).append(on_open(str(name)))

    def closed() -> None:
        found = getattr(stacks, "open", None)
        if found:
            on_close(found.pop())

    nvtx = torch.cuda.nvtx
    push, pop = nvtx.range_push, nvtx.range_pop

    def range_push(msg):
        depth = push(msg)  # first: where NVTX fails (a CPU build), no range opens either
        opened(msg)
        return depth

    def range_pop():
        closed()
        return pop()

    nvtx.range_push, nvtx.range_pop = range_push, range_pop
    if record_functions:
        _hook_record_functions(opened, closed)
    try:
        import nvtx as nvtx_pkg  # NVIDIA's package: optional
    except ImportError:
        return
    pkg_push, pkg_pop = nvtx_pkg.push_range, nvtx_pkg.pop_range

    def push_range(message=None, *args, **kwargs):
        pushed = pkg_push(message, *args, **kwargs)
        opened(message or "")
        return pushed

    def pop_range(*args, **kwargs):
        closed()
        return pkg_pop(*args, **kwargs)

    nvtx_pkg.push_range, nvtx_pkg.pop_range = push_range, pop_range
    annotate = nvtx_pkg.annotate

    class Annotate(annotate):  # nvtx.annotate, as a context manager
        def __init__(self, message=None, *args, **kwargs):
            super().__init__(message, *args, **kwargs)
            self._profkit_name = message or "annotate"

        def __enter__(self):
            entered = super().__enter__()
            opened(self._profkit_name)
            return entered

        def __exit__(self, *exc):
            closed()
            return super().__exit__(*exc)

    nvtx_pkg.annotate = Annotate


def _hook_record_functions(opened: Callable[[str], None], closed: Callable[[], None]) -> None:
    from torch.autograd.profiler import record_function

    enter, leave = record_function.__enter__, record_function.__exit__

    def __enter__(self):
        entered = enter(self)
        opened(self.name)
        return entered

    def __exit__(self, *exc):
        closed()
        return leave(self, *exc)

    record_function.__enter__, record_function.__exit__ = __enter__, __exit__


if __name__ == "__main__":
    sys.exit(main())
