"""A torch.profiler Chrome trace -> the timing pass's export: one row per GPU activity, one per
user range. Pure Python (no torch), so the parsing is tested on stored traces anywhere.

Each kernel is tied to its launch through CUPTI's correlation id (the runtime or driver call on the
host that launched it). Its enclosing user ranges (record_function, and NVTX ranges that
profkit's child also opens as record_function) are those whose time span holds the launch call, on
any thread of the program: loss.backward() launches from autograd's own thread while the user's
range on the main thread is still open. Its op is the innermost PyTorch op on the launching thread
(the range torch.autograd.profiler.emit_nvtx would emit), with the op's first floating input type;
its op_ids name every aten op call holding it there (the export's "ops"), for the counter pass;
its grad_fn names the autograd node evaluating there (the engine's "evaluate_function" range), so
backward's kernels say which forward op's gradient they compute, whatever the user's ranges.
"""

from __future__ import annotations

from collections.abc import Mapping

FORMAT = "profkit-workload-timing"
VERSION = 1
KERNEL_COLUMNS = (
    "kind",  # kernel | memcpy | memset
    "name",
    "start_us",
    "dur_us",
    "launch_us",  # when the host called the launch (None if CUPTI left no call)
    "correlation",
    "stream",
    "grid",
    "block",
    "ranges",  # enclosing user ranges, outermost first, joined by " > "
    "op",
    "dtype",
    "op_ids",  # the aten ops holding the launch on its thread (rows of "ops"), outermost first
    "grad_fn",  # the autograd node (AddmmBackward0 ...) whose backward launched it; None outside
)
OP_COLUMNS = ("name", "start_us", "end_us", "tid")
RANGE_COLUMNS = ("name", "start_us", "end_us", "tid")
RANGE_SEP = " > "

_ACTIVITY = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
_NODE = "autograd::engine::evaluate_function: "
# torch's names for element types (record_shapes' "Input type") -> profkit's dtype names
_DTYPES = {
    "c10::BFloat16": "bfloat16",
    "c10::Half": "float16",
    "float": "float32",
    "double": "float64",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2",
}


def export_from_trace(trace: Mapping, meta: Mapping) -> dict:
    """The export (see KERNEL_COLUMNS, RANGE_COLUMNS) of one Chrome trace; meta adds the run's
    facts (argv, exit status, wall time)."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    launches = {}
    ops: dict[object, list[dict]] = {}
    user = []
    for e in events:
        cat = e.get("cat")
        if cat in _LAUNCH_CATS and "correlation" in (e.get("args") or {}):
            launches[e["args"]["correlation"]] = e
        elif cat == "cpu_op":
            ops.setdefault(e.get("tid"), []).append(e)
        elif cat == "user_annotation":
            user.append(e)
    activities = [e for e in events if e.get("cat") in _ACTIVITY]
    calls = [launches.get((e.get("args") or {}).get("correlation")) for e in activities]
    at = [c["ts"] if c else None for c in calls]
    ranges = _holders(user, at)
    aten = sorted((e for spans in ops.values() for e in spans if _aten(e)), key=_order)
    index = {id(e): i for i, e in enumerate(aten)}
    innermost: list[dict | None] = [None] * len(activities)
    chains: list[list[int]] = [[] for _ in activities]
    nodes: list[str | None] = [None] * len(activities)
    for tid, spans in ops.items():
        mine = [i for i, c in enumerate(calls) if c is not None and c.get("tid") == tid]
        for i, found in zip(mine, _holders(spans, [at[i] for i in mine]), strict=True):
            innermost[i] = found[-1] if found else None
            chains[i] = [index[id(e)] for e in found if id(e) in index]
            nodes[i] = _grad_fn(found)
    rows = []
    columns = (activities, at, ranges, innermost, chains, nodes)
    for e, when, held, op, chain, node in zip(*columns, strict=True):
        args = e.get("args") or {}
        rows.append(
            [
                _ACTIVITY[e["cat"]],
                e.get("name", ""),
                e["ts"],
                e.get("dur", 0.0),
                when,
                args.get("correlation"),
                args.get("stream"),
                _dims(args.get("grid")),
                _dims(args.get("block")),
                RANGE_SEP.join(r["name"] for r in held),
                op.get("name") if op else None,
                _dtype(op),
                chain,
                node,
            ]
        )
    rows.sort(key=lambda r: (r[2], r[5] if r[5] is not None else -1))
    user.sort(key=_order)
    return {
        "format": FORMAT,
        "version": VERSION,
        **meta,
        "kernels": {"columns": list(KERNEL_COLUMNS), "rows": rows},
        "ranges": {
            "columns": list(RANGE_COLUMNS),
            "rows": [_span(e) for e in user],
        },
        # every aten op call, so that the counter pass can name the call that launched a kernel
        "ops": {"columns": list(OP_COLUMNS), "rows": [_span(e) for e in aten]},
    }


def call_key(name: str) -> str:
    """An aten op's name for numbering its calls (the counter pass's gate): in-place and
    out-of-place as one (the autograd engine accumulates gradients with add_, but with add under
    a dispatch mode)."""
    return name[:-1] if name.endswith("_") else name


def _grad_fn(holders: list[dict]) -> str | None:
    """The innermost autograd node evaluating among a launch's holders (AddmmBackward0; the
    engine's own nodes without their torch::autograd:: namespace), None outside backward."""
    for e in reversed(holders):
        name = str(e.get("name", ""))
        if name.startswith(_NODE):
            return name[len(_NODE) :].rsplit("::", 1)[-1]
    return None


def _aten(e: Mapping) -> bool:
    return str(e.get("name", "")).startswith("aten::")


def _span(e: Mapping) -> list:
    return [e["name"], e["ts"], e["ts"] + e.get("dur", 0.0), e.get("tid")]


def _order(span: Mapping) -> tuple[float, float]:
    return span["ts"], -span.get("dur", 0.0)  # an outer range before the inner one it starts with


def _holders(spans: list[dict], times: list[float | None]) -> list[list[dict]]:
    """For each time, the spans holding it, outermost first (None: none). One sweep over spans
    and times in order, keeping the spans still open: ranges nest, so that list stays short."""
    spans = sorted(spans, key=_order)
    out: list[list[dict]] = [[] for _ in times]
    queries = sorted((t, i) for i, t in enumerate(times) if t is not None)
    open_: list[dict] = []
    j = 0
    for t, i in queries:
        while j < len(spans) and spans[j]["ts"] <= t:
            open_.append(spans[j])
            j += 1
        open_ = [s for s in open_ if s["ts"] + s.get("dur", 0.0) >= t]
        out[i] = list(open_)
    return out


def _dims(value) -> str | None:
    if not isinstance(value, (list, tuple)) or not value:
        return None
    return "x".join(str(int(v)) for v in value)


def _dtype(op: Mapping | None) -> str | None:
    if not op:
        return None
    for name in (op.get("args") or {}).get("Input type") or []:
        if name in _DTYPES:
            return _DTYPES[name]
    return None
