"""`profkit capture KERNEL... --cluster`: a sweep spread over a Dask cluster, one worker per GPU.

The sweep is cut into case groups: every variant of one (kernel, dtype, shape) is one group, so the
cases a verdict compares always ran on the same GPU in the same process. Each group runs on a
worker through capture's own stages (measure_cases, counter_pass) and comes back as picklable
tables; the group touches nothing outside a temporary directory it removes, so running it again
(after a worker died, or under Dask's retries=) is safe. The client merges the groups into one run
per kernel and stores it as a plain capture does (store.RunWriter, atomic): workers never write the
store, and nothing is stored until every group is back (Ctrl-C or a failed group leaves no run).

Dask is imported only here, and this module only under --cluster: a plain capture never loads it.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.live import Live
from rich.table import Table

from profkit import store
from profkit.capture import CaptureOptions, check_names, run_manifest
from profkit.errors import ProfkitError
from profkit.spec import KernelSpec, Shape, format_shape

EVENTS = "profkit-groups"  # the scheduler's event topic: a group's attempts, started and done
# each case row says where it ran (the GPU is the column explain and dashboards group by)
PLACE_COLUMNS = ("host", "gpu", "gpu_uuid", "worker", "group", "counters_status")
CEILING_COLUMNS = {"copy_gbps": "ceiling_copy_gbps", "matmul_tflops": "ceiling_matmul_tflops"}
RETRIES = 1  # Dask retries= for an error raised by a group (a dead worker is rescheduled anyway)


@dataclass(frozen=True)
class Group:
    """Every variant of one kernel at one (dtype, shape): the unit a worker runs."""

    kernel: str
    dtype: str
    shape: Shape
    opts: CaptureOptions  # the kernel's options cut down to this dtype and shape

    @property
    def name(self) -> str:
        return f"{self.kernel}/{self.dtype}/{format_shape(self.shape)}"


def split(spec: KernelSpec, opts: CaptureOptions) -> list[Group]:
    """The sweep's groups in capture's case order (dtype, then shape, then variant), each with the
    index of its first case so its checks use the seeds of the whole sweep."""
    groups = []
    for d_i, dtype in enumerate(opts.dtypes):
        for s_i, shape in enumerate(opts.shapes):
            offset = (d_i * len(opts.shapes) + s_i) * len(opts.variants)
            cut = replace(opts, dtypes=(dtype,), shapes=(shape,), case_offset=offset)
            groups.append(Group(spec.name, dtype, shape, cut))
    return groups


# ---- on the worker ------------------------------------------------------------------------------

_CEILINGS: dict[str, dict] = {}  # per worker process and GPU: measured once, not once per group


def where_am_i(interpret: bool) -> dict:
    """This process's host and GPU: model, UUID and clocks (nvidia-smi by UUID, since nvidia-smi
    ignores CUDA_VISIBLE_DEVICES)."""
    place = {"host": socket.gethostname(), "gpu": None, "gpu_uuid": None, "pid": os.getpid()}
    if interpret:
        place["gpu"] = "none (interpret)"
        return place
    import torch

    props = torch.cuda.get_device_properties(0)
    uuid = str(props.uuid)
    uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
    place.update(gpu=props.name, gpu_uuid=uuid)
    place.update(_clocks(uuid))
    return place


def _clocks(uuid: str) -> dict:
    query = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={uuid}", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.split(",")
    except (subprocess.SubprocessError, OSError):
        return {}
    values = [v.strip() for v in out]
    clocks = dict(zip(("sm", "mem", "max_sm", "max_mem"), values[1:], strict=False))
    return {"driver": values[0], "clocks_mhz": clocks}


def _worker():
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:  # called outside a worker (tests call run_group directly)
        return None


def _log(event: str, group: str, **more) -> None:
    worker = _worker()
    if worker is not None:
        worker.log_event(EVENTS, {"event": event, "group": group, "worker": worker.address, **more})


def _quiet_client_teardown() -> None:
    """On a worker: a client that a cancelled sweep left half made (Ctrl-C while the worker made
    it) is deleted after the worker's loop has closed, and its __del__ raised "IOLoop is closed":
    Dask's cleanup, not a failure, but printed as a traceback on the user's terminal."""
    default = sys.unraisablehook
    if getattr(default, "profkit", False):
        return

    def hook(unraisable) -> None:
        if not _teardown_noise(unraisable):
            default(unraisable)

    hook.profkit = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def _teardown_noise(unraisable) -> bool:
    value = unraisable.exc_value
    return isinstance(value, RuntimeError) and str(value) == "IOLoop is closed"


def run_group(group: Group, deliver_to: str | None = None) -> dict:
    """Check, time and profile one group on this worker's GPU; return its tables (no store).

    With deliver_to (a Dask Queue's name), the tables go straight into that queue, which lives on
    the scheduler, and the task returns only a receipt: a worker that dies after this group and
    before the client gathered it takes nothing measured with it."""
    opts = group.opts
    if opts.interpret:
        os.environ["TRITON_INTERPRET"] = "1"  # before the kernel's module imports triton
    _quiet_client_teardown()
    queue = None
    if deliver_to is not None:
        from distributed import Queue

        # its client is made now, while the worker runs: one made as the worker closes (Ctrl-C
        # cancelled the sweep mid-group) outlives the worker's loop, and its __del__ printed a
        # traceback
        queue = Queue(deliver_to)
    place = where_am_i(opts.interpret)
    _log("start", group.name, pid=place["pid"], host=place["host"])
    from profkit import hostenv
    from profkit.capture import counter_pass, measure_cases
    from profkit.spec import find_spec

    spec = find_spec(group.kernel, opts.from_file)
    console = Console(file=io.StringIO(), width=100)  # the group's notes travel back as text
    key = place["gpu_uuid"] or "cpu"
    if key not in _CEILINGS:
        _CEILINGS[key] = {} if opts.interpret else hostenv.measure_ceilings()
    ceilings = _CEILINGS[key]
    started = time.perf_counter()
    table, samples = measure_cases(spec, opts, console, ceilings)
    timing_s = time.perf_counter() - started
    out = {"group": group.name, "place": place, "ceilings": ceilings, "timing_s": timing_s}
    out.update(table=table, samples=samples, kernels=None, rules=None, report=None)
    if opts.interpret:
        counters = {"status": "skipped", "reason": "interpret mode: correctness only"}
    elif not opts.counters:
        counters = {"status": "skipped", "reason": "--no-counters: timing only"}
    else:
        # counter_pass writes its job, log and report into a writer's directory: a private one
        with tempfile.TemporaryDirectory(prefix="profkit-group-") as tmp:
            writer = store.RunWriter(Path(tmp), spec.name)
            counters, kernels = counter_pass(spec, opts, table, writer, console)
            out["kernels"] = kernels
            rules = writer.path(store.RULES)
            out["rules"] = pd.read_csv(rules) if rules.is_file() else None
            report = writer.path(store.REPORT)
            out["report"] = report.read_bytes() if report.is_file() else None
    table["counters_status"] = counters.get("status")
    for col, value in (("host", place["host"]), ("gpu", place["gpu"]), ("group", group.name)):
        table[col] = value
    table["gpu_uuid"] = place["gpu_uuid"]
    for key_, col in CEILING_COLUMNS.items():
        table[col] = ceilings.get(key_)
    worker = _worker()
    out.update(counters=counters, log=console.file.getvalue())
    out["worker"] = worker.address if worker is not None else "in-process"
    out["pid"] = place["pid"]
    if queue is not None:
        queue.put(pickle.dumps(out))
        out = {"group": group.name, "worker": out["worker"], "pid": place["pid"]}
    _log("done", group.name, pid=place["pid"])
    return out


# ---- on the client ------------------------------------------------------------------------------


def _connect(address: str, workers: int | None, interpret: bool):
    """(client, cluster or None): a local cluster on 127.0.0.1 only, or an existing scheduler."""
    import dask
    from distributed import Client

    if address == "local":
        with _ctrl_c_held():
            cluster = local_cluster(workers, interpret)
        return Client(cluster), cluster
    if not address.startswith(("tcp://", "tls://")):
        raise ProfkitError(
            f"--cluster {address!r}: give 'local' or a scheduler address, tcp://HOST:8786 or "
            "tls://HOST:8786"
        )
    timeout = dask.config.get("distributed.comm.timeouts.connect")
    try:
        # tls://: the certificates come from Dask's configuration (distributed.comm.tls.*)
        return Client(address, timeout=timeout), None
    except (OSError, TimeoutError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ProfkitError(f"cannot reach the Dask scheduler at {address}: {first}") from None


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """SIGINT blocked while a local cluster starts: its worker processes (and the threads that
    spawn them) inherit the mask, so a terminal's Ctrl-C, sent to the whole process group, reaches
    profkit alone, which stops them; without it each worker printed its own KeyboardInterrupt
    traceback. A Ctrl-C meanwhile waits, and is delivered when the mask is restored."""
    from multiprocessing import resource_tracker

    # started first: starting it unblocks SIGINT in the thread that does (the cluster's loop)
    resource_tracker.ensure_running()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextmanager
def _ctrl_c_deferred() -> Iterator[threading.Event]:
    """Ctrl-C sets the event instead of raising: the sweep's loop stops at its next turn and the
    cluster is closed in order. A KeyboardInterrupt raised inside Dask's own waits left Dask's
    tracebacks on the terminal (a cancelled callback, a client deleted after its loop closed).
    Raised, once the cluster is closed, when this block ends."""
    asked = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield asked  # signals reach the main thread only: nothing to take over
        return
    before = signal.signal(signal.SIGINT, lambda *_: asked.set())
    try:
        yield asked
    finally:
        signal.signal(signal.SIGINT, before)
    if asked.is_set():
        raise KeyboardInterrupt


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:
        return 0


def local_cluster(workers: int | None, interpret: bool):
    """One single-threaded worker process per GPU (CUDA_VISIBLE_DEVICES pinned: dask-cuda's
    LocalCUDACluster where installed, else a Nanny per GPU with its own environment); under
    --interpret, `workers` CPU processes. Every port on 127.0.0.1, no dashboard."""
    from distributed import LocalCluster, Nanny, Scheduler, SpecCluster

    # the scheduler's HTTP server (its health and metrics routes, even without a dashboard) on a
    # free port: on its default, 8787, a second cluster on the host printed a port warning
    quiet = {
        "dashboard_address": None,
        "silence_logs": logging.CRITICAL,
        "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"},
    }
    if interpret:
        env = {"TRITON_INTERPRET": "1"}
        n = workers or 2
        return LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1", env=env, **quiet
        )
    gpus = _gpu_count()
    if not gpus:
        raise ProfkitError("--cluster local: no CUDA GPU here")
    devices = list(range(gpus))[: workers or gpus]
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        LocalCUDACluster = None
    if LocalCUDACluster is not None:
        visible = ",".join(str(d) for d in devices)
        return LocalCUDACluster(
            CUDA_VISIBLE_DEVICES=visible, threads_per_worker=1, host="127.0.0.1", **quiet
        )
    workers_spec = {
        f"gpu{d}": {
            "cls": Nanny,
            "options": {
                "nthreads": 1,
                "host": "127.0.0.1",
                "env": {"CUDA_VISIBLE_DEVICES": str(d)},
            },  # noqa: E501
        }
        for d in devices
    }
    scheduler = {
        "cls": Scheduler,
        "options": {"host": "127.0.0.1", "dashboard": False, "dashboard_address": "127.0.0.1:0"},
    }
    return SpecCluster(workers=workers_spec, scheduler=scheduler, silence_logs=logging.CRITICAL)


@dataclass
class Attempts:
    """What the scheduler's event log says each group's attempts did."""

    events: list[dict]

    def of(self, group: str) -> list[dict]:
        return [e for e in self.events if e.get("group") == group]

    def running(self) -> dict[str, str]:
        """group -> worker, for the attempts started and not yet done."""
        now: dict[str, str] = {}
        for e in self.events:
            if e.get("event") == "start":
                now[e["group"]] = e["worker"]
            elif e.get("event") == "done":
                now.pop(e["group"], None)
        return now


def _events(client) -> Attempts:
    return Attempts(
        [msg | {"t": t} for t, msg in client.get_events(EVENTS) if isinstance(msg, dict)]
    )


def _view(groups: list[Group], done: dict[str, dict], attempts: Attempts, workers: dict) -> Table:
    """Groups done, running and left, per worker and in all."""
    table = Table("worker", "host", "done", "running", title="case groups")
    running = {g: w for g, w in attempts.running().items() if g not in done}
    for addr in sorted(set(workers) | {r["worker"] for r in done.values()} | set(running.values())):
        n_done = sum(r["worker"] == addr for r in done.values())
        n_run = sum(w == addr for w in running.values())
        host = workers.get(addr, {}).get("host", "(gone)")
        table.add_row(addr, host, str(n_done), str(n_run))
    left = len(groups) - len(done) - len(running)
    table.add_row("all", "", str(len(done)), str(len(running)), end_section=True)
    table.caption = f"{left} group(s) left of {len(groups)}"
    return table


def _workers(client) -> dict[str, dict]:
    info = client.scheduler_info(n_workers=-1) if _takes_n(client) else client.scheduler_info()
    return {a: {"host": w.get("host")} for a, w in info["workers"].items()}


def _takes_n(client) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def run_groups(
    client, groups: list[Group], console: Console, stop: threading.Event | None = None
) -> tuple[dict[str, dict], Attempts]:
    """Every group's result, taken from the scheduler's queue as soon as it is done (so a worker
    that dies later loses nothing measured); the first group that fails for good ends the sweep
    (no run is stored), as does `stop` (Ctrl-C) once set."""
    from distributed import Queue, wait

    token = os.urandom(4).hex()
    queue = Queue(f"profkit-{token}", client=client)
    pending = {
        client.submit(run_group, g, queue.name, key=f"profkit-{g.name}-{token}", retries=RETRIES): g
        for g in groups
    }
    done: dict[str, dict] = {}
    seen: dict[str, dict] = _workers(client)
    try:
        with Live(console=console, refresh_per_second=4, transient=False) as live:
            while len(done) < len(groups):
                if stop is not None and stop.is_set():
                    raise KeyboardInterrupt
                try:
                    wait(list(pending), timeout=0.5, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    pass
                # results first: a future that finished has put its result in the queue already
                for item in queue.get(batch=True):
                    result = pickle.loads(item)
                    done.setdefault(result["group"], result)  # a rerun's copy: the first counts
                for fut in [f for f in pending if f.done() or pending[f].name in done]:
                    group = pending[fut]
                    if group.name not in done and fut.status == "finished":
                        continue  # finished after the queue was read: its result comes next round
                    if group.name not in done:
                        raise ProfkitError(_failure(group, fut.exception()))
                    del pending[fut]
                    done[group.name]["scheduler"] = _task_record(client, fut.key)
                    fut.cancel()  # its result is in hand: never run again
                seen.update(_workers(client))
                live.update(_view(groups, done, _events(client), seen))
    finally:
        if pending:  # Ctrl-C or a failed group: nothing more runs on the cluster's GPUs
            client.cancel(list(pending), force=True)
    return done, _events(client)


def _task_record(client, key: str) -> dict:
    """What the scheduler counted for the group's task: workers that died while it ran there
    (suspicious) and errors retried. A worker that dies at once may never send its start event;
    the scheduler's count does not depend on it."""

    def ask(dask_scheduler, key):
        ts = dask_scheduler.tasks.get(key)
        if ts is None:
            return {}
        return {"died_under": ts.suspicious, "retries_left": ts.retries}

    try:
        return client.run_on_scheduler(ask, key=key)
    except Exception:  # a record only: never the reason a sweep fails
        return {}


def _failure(group: Group, exc: BaseException | None) -> str:
    name = type(exc).__name__ if exc is not None else "cancelled"
    if name == "KilledWorker":
        return (
            f"case group {group.name} took down every worker that ran it ({exc}): no run stored; "
            "run it alone with a plain `profkit capture` to see why"
        )
    text = " ".join(str(exc).split())[:200]
    return f"case group {group.name} failed on the cluster ({name}: {text}): no run stored"


def retried(groups: list[Group], done: dict[str, dict], attempts: Attempts, gone: set) -> list:
    """Groups that ran more than once, and why: workers that died under them (the scheduler's
    count), errors Dask retried, and each earlier attempt the event log saw."""
    out = []
    for g in groups:
        kept = done[g.name]
        record = kept.get("scheduler") or {}
        died = int(record.get("died_under") or 0)
        errors = RETRIES - int(record.get("retries_left", RETRIES))
        starts = [e for e in attempts.of(g.name) if e.get("event") == "start"]
        mine = [e for e in starts if (e["worker"], e.get("pid")) == (kept["worker"], kept["pid"])]
        others = [e for e in starts if not mine or e is not mine[-1]]
        if not (died or errors or others):
            continue
        why = []
        if died:
            why.append(f"{died} worker(s) died mid-group; the group ran again on {kept['worker']}")
        if errors:
            why.append(f"{errors} attempt(s) raised an error; Dask retried (retries={RETRIES})")
        for e in others:
            who = f"worker {e['worker']} (pid {e.get('pid')} on {e.get('host')})"
            if mine and e["t"] > mine[-1]["t"]:
                why.append(f"{who} ran it again after its result was in; the first result is kept")
            elif e["worker"] in gone:
                why.append(f"{who} started it and left the cluster")
            else:
                why.append(f"{who} started it and did not finish")
        attempts_n = max(len(starts), 1 + died + errors)
        out.append({"group": g.name, "attempts": attempts_n, "kept": kept["worker"], "why": why})
    return out


def run_cluster_capture(
    jobs: list[tuple[KernelSpec, CaptureOptions]],
    address: str,
    workers: int | None = None,
    console: Console | None = None,
) -> list[Path]:
    """Every kernel's sweep spread over the cluster; one stored run per kernel."""
    from profkit.capture import check_shapes

    console = console or Console(stderr=True)
    for spec, opts in jobs:
        check_names(spec)
        check_shapes(spec, opts)
    groups = [g for spec, opts in jobs for g in split(spec, opts)]
    interpret = any(opts.interpret for _, opts in jobs)
    with _ctrl_c_deferred() as interrupted:
        client, cluster = _connect(address, workers, interpret)
        try:
            started = time.perf_counter()
            before = _workers(client)
            console.print(f"cluster: {len(groups)} case group(s) over {len(before)} worker(s)")
            done, attempts = run_groups(client, groups, console, interrupted)
            wall_s = round(time.perf_counter() - started, 1)
            now = _workers(client)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    started_on = {e["worker"] for e in attempts.events if e.get("event") == "start"}
    gone = (set(before) | started_on) - set(now)
    where = "local (127.0.0.1)" if address == "local" else address
    paths = []
    for spec, opts in jobs:
        mine = [g for g in groups if g.kernel == spec.name]
        block = {
            "scheduler": where,
            "wall_s": wall_s,
            "workers": _worker_block(mine, done),
            "groups": [g.name for g in mine],
            "retried": retried(mine, done, attempts, gone),
        }
        paths.append(store_run(spec, opts, [done[g.name] for g in mine], block))
    return paths


def _worker_block(groups: list[Group], done: dict[str, dict]) -> dict:
    out: dict[str, dict] = {}
    for g in groups:
        r = done[g.name]
        place = r["place"]
        entry = out.setdefault(
            r["worker"],
            {"host": place["host"], "gpu": place["gpu"], "gpu_uuid": place["gpu_uuid"]}
            | {k: place[k] for k in ("clocks_mhz", "driver") if k in place}
            | {"ceilings": r["ceilings"], "groups": []},
        )
        entry["groups"].append(g.name)
    return out


def _counters_block(results: list[dict], opts: CaptureOptions) -> dict:
    blocks = {r["group"]: r["counters"] for r in results}
    statuses = {b.get("status") for b in blocks.values()}
    if statuses <= {"skipped"}:
        return next(iter(blocks.values()))
    bad = {g: b for g, b in blocks.items() if b.get("status") != "ok"}
    if len(bad) == len(blocks):
        first = next(iter(bad.values()))
        return first | {"groups": bad}
    block = {"status": "ok", "groups": {g: b for g, b in blocks.items()}}
    if bad:  # e.g. a worker without counter permission: its groups are timing only, and say so
        block["timing_only_groups"] = sorted(bad)
    return block


def _offset_launches(frames: list[pd.DataFrame | None]) -> pd.DataFrame | None:
    """One table of launches over the groups' reports, launch numbers kept distinct."""
    kept, offset = [], 0
    for df in frames:
        if df is None or df.empty:
            continue
        df = df.copy()
        if "launch" in df.columns:
            df["launch"] = pd.to_numeric(df["launch"]) + offset
            offset = int(df["launch"].max()) + 1
        kept.append(df)
    return pd.concat(kept, ignore_index=True) if kept else None


def merge(results: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None, list]:
    """(cases, samples, kernels, rules-per-group) of the groups, in the sweep's case order."""
    table = pd.concat([r["table"] for r in results], ignore_index=True)
    samples = pd.concat([r["samples"] for r in results], ignore_index=True)
    kernels = [r["kernels"] for r in results]
    rules = [r["rules"] for r in results]
    return table, samples, kernels, rules


def store_run(spec: KernelSpec, opts: CaptureOptions, results: list[dict], block: dict) -> Path:
    """One run of the kernel's groups, stored exactly as a plain capture stores one."""
    from profkit.counters.join import aggregate_cases, join

    table, samples, kernels, rules = merge(results)
    # the rules' launch numbers follow their group's launches, as the kernels' do
    offsets, n = [], 0
    for k in kernels:
        offsets.append(n)
        if k is not None and not k.empty and "launch" in k.columns:
            n += int(pd.to_numeric(k["launch"]).max()) + 1
    kernels_all = _offset_launches(kernels)
    rules = [
        None if r is None else r.assign(launch=pd.to_numeric(r["launch"]) + off)
        for r, off in zip(rules, offsets, strict=True)
    ]
    rules_all = (
        pd.concat([r for r in rules if r is not None], ignore_index=True)
        if any(r is not None for r in rules)
        else None
    )
    writer = store.RunWriter(opts.root, spec.name)
    try:
        if not samples.empty:
            writer.write_samples(samples)
        if kernels_all is not None:
            writer.write_table(store.KERNELS, kernels_all)
        if rules_all is not None and not rules_all.empty:
            writer.write_table(store.RULES, rules_all)
        reports = [(r["group"], r["report"]) for r in results if r.get("report")]
        if len(reports) == 1:
            writer.path(store.REPORT).write_bytes(reports[0][1])
        for group, data in reports if len(reports) > 1 else []:
            (writer.path("reports")).mkdir(exist_ok=True)
            writer.path(f"reports/{group.replace('/', '_')}.ncu-rep").write_bytes(data)
        counters = _counters_block(results, opts)
        joined = join(table, aggregate_cases(kernels_all) if kernels_all is not None else None)
        # where each case ran: after the counters, so the columns a plain run has keep their order
        place = [c for c in (*PLACE_COLUMNS, *CEILING_COLUMNS.values()) if c in joined.columns]
        joined = joined[[c for c in joined.columns if c not in place] + place]
        writer.write_table(store.CASES, joined)
        gpus = sorted({str(r["place"]["gpu"]) for r in results})
        first = results[0]
        fingerprint = _fingerprint(first["place"], gpus)
        timing_s = round(sum(r["timing_s"] for r in results), 1)
        # one GPU model: its ceilings; several: each case carries its own (ceiling_* columns)
        ceilings = first["ceilings"] if len(gpus) == 1 else {}
        manifest = run_manifest(spec, opts, timing_s, fingerprint, ceilings, counters)
        manifest["cluster"] = block
        return writer.finish(manifest)
    except BaseException:
        writer.abandon()
        raise


def _fingerprint(place: dict, gpus: list[str]) -> dict:
    from profkit import hostenv

    info = hostenv.fingerprint()  # the client's library versions; the GPUs are the workers'
    for key in ("gpu", "sm_count", "compute_capability", "memory_gib", "driver", "clocks_mhz"):
        info.pop(key, None)
    info["hostname"] = place["host"]
    if not place["gpu"] or place["gpu"].startswith("none"):
        return info
    info["gpu"] = gpus[0] if len(gpus) == 1 else "several: " + ", ".join(gpus)
    info["gpus"] = gpus
    return info
