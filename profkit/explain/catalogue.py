"""The cause catalogue: one entry per cause, as data. Each names the evidence it needs (fields of
LaunchRecord), its test, what would refute it, and its remedy by kind of kernel, or the steps its
test chooses by the evidence (Found.steps); one judgment may end in one of several causes
(Found.cause: where a stream stands to its copy roof, a matrix product's Tensor pipe). What a test
reads besides the counters is put on the record by diagnose (the device, the case's dtype, read
floor, siblings and bottleneck). The engine only evaluates entries: a cause whose evidence was not
collected is "not measured", never guessed.

Thresholds live in profkit/thresholds.py with their sources; the words for causes and steps live
in profkit/explain/phrases.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from operator import itemgetter

from profkit import thresholds as th
from profkit.explain.context import Said
from profkit.explain.evidence import Evidence
from profkit.explain.kinds import FALLBACK, MATRIX, KernelKind, Owner
from profkit.explain.model import Action, Advice, Bottleneck, Cause, Reason, Unit
from profkit.explain.record import SECTOR_BYTES, WARPS_PER_SM, LaunchRecord
from profkit.explain.roofs import busiest_pipe, near_copy_line
from profkit.explain.siblings import match
from profkit.explain.stalls import ADVICE_TEXT


@dataclass(frozen=True)
class Found:
    """What a test returns where the cause's reason quotes fewer keys than its evidence holds,
    or carries detail (a plain dict: every key quoted, no detail), or where the evidence chooses
    the steps, each with its own keys and detail, in the place of the kind's remedy (which stall
    dominates); an empty tuple: the cause is said with no step. `cause`: where one judgment ends
    in one of several causes (at the copy roof, short of it, a sibling faster), the one found."""

    evidence: dict
    keys: list[str]
    detail: dict = field(default_factory=dict)
    steps: tuple[Advice, ...] | None = None
    cause: Cause | None = None


@dataclass(frozen=True)
class Entry:
    cause: Cause
    unit: Unit | None  # the unit the cause limits, where it names one
    needs: tuple[str, ...]  # LaunchRecord fields or properties
    # evidence (key -> number) when the cause holds, or a Found naming its keys and detail
    test: Callable[[LaunchRecord], dict | Found | None]
    refuted_by: str  # what an expert would check to refute it
    # ANY: the default; None: no step for that kind (the cause is a fact there); empty: its test
    # chooses the steps by the evidence (Found.steps)
    remedies: Mapping[KernelKind, Action | None] = field(default_factory=dict)
    # the remedy where the code's owner decides it, read before the kind's: a library's options
    # or another backend, Inductor's inputs and options, for a cause in code the user cannot edit
    owners: Mapping[Owner, Action] = field(default_factory=dict)
    # causes its finding refutes: their reasons (and steps) are dropped where it is found
    refutes: frozenset[Cause] = frozenset()
    # the kernel kinds it applies to (empty: every kind); elsewhere it is not judged at all, and
    # not listed as "not measured"
    kinds: frozenset[KernelKind] = frozenset()
    # the bottlenecks it applies to (empty: every one); elsewhere it is not judged at all, and not
    # listed as "not measured"
    bottlenecks: frozenset[Bottleneck] = frozenset()
    # where the cause holds yet costs little time: the evidence that shows it (said as a fact,
    # detail "minor", with no step; the cause is looked for elsewhere)
    minor: Callable[[LaunchRecord], dict | None] | None = None
    # its place among the specific causes said before any story from the SOL lines (lower
    # first); None: the bottleneck's story places it
    rank: int | None = None
    # judged on a chain's record only (several launches): on one launch it is not judged at all,
    # and not listed as "not measured"
    chains: bool = False
    # where a counter it needs was not collected: a coarser test that can find the cause but
    # never rules it out (where it finds nothing, the cause stays "not measured")
    fallback: Callable[[LaunchRecord], dict | Found | None] | None = None

    def remedy(self, kind: KernelKind, owner: Owner = Owner.USER) -> Action | None:
        """The owner's remedy (Entry.owners), else the kind's, else its nearest kind's
        (profkit.explain.kinds.FALLBACK), else ANY."""
        if owner in self.owners:
            return self.owners[owner]
        for k in (kind, FALLBACK.get(kind), KernelKind.ANY):
            if k in self.remedies:
                return self.remedies[k]
        return None


@dataclass(frozen=True)
class Outcome:
    entry: Entry
    status: str  # "found" | "absent" | "not measured"
    evidence: dict = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    minor: dict | None = None  # Entry.minor's evidence, where the cause holds but costs little
    keys: list[str] | None = None  # the reason's keys where not every evidence key
    detail: dict = field(default_factory=dict)  # the reason's and its step's
    steps: tuple[Advice, ...] | None = None  # Found.steps
    cause: Cause | None = None  # Found.cause, else the entry's


# --- tests: each reads the record only --------------------------------------------------------


def _spills(r: LaunchRecord) -> dict | None:
    share = r.local_share
    if share is None or share < th.SPILL_LOCAL_SHARE:
        return None
    out = {"local_bytes": r.local_bytes, "local_share_pct": share * 100}
    if r.registers_per_thread is not None:
        out["registers_per_thread"] = r.registers_per_thread
    return out


def _atomic_contention(r: LaunchRecord) -> dict | None:
    busy_max, busy = r.l2_atomic_busy_max_pct, r.l2_atomic_busy_pct
    if not r.atomic_requests or busy_max is None or busy_max < th.ATOMIC_SLICE_BUSY_PCT:
        return None
    if busy and busy_max / busy < th.ATOMIC_CONCENTRATION_X:
        return None  # busy everywhere alike: many addresses, no hot spot
    out = {
        "atomic_requests": r.atomic_requests,
        "l2_atomic_busy_max_pct": busy_max,
        "l2_atomic_busy_pct": busy,
    }
    return out


def _uncoalesced(r: LaunchRecord) -> dict | Found | None:
    ratio = r.ld_sectors_over_ideal
    if ratio is None or ratio < th.UNCOALESCED_SECTOR_RATIO:
        return _scattered_atomics(r)
    if r.l1_hit_pct is not None and (r.l1_pct or 0.0) < th.HIGH_THROUGHPUT_PCT:
        # sectors the next loads find in L1 cost no L2 or DRAM traffic, and an L1 short of busy
        # has room for their wavefronts: judged by the sectors that miss it. ATen's layer norm
        # (bf16 8192x4096, tests/data/holdout/ho_layer_norm-20261204-152721-vm-87af1b): 2.5x
        # the ideal sectors, 75.6% of them L1 hits (0.61x missing it), L1 54.5% busy, DRAM reads
        # 67.9 MB for its 67.1 MB input; the zoo's strided read: 8.0x, 0% hits
        if ratio * (1 - r.l1_hit_pct / 100) < th.UNCOALESCED_SECTOR_RATIO:
            return _scattered_atomics(r)
    return {
        "global_ld_sectors": r.global_ld_sectors,
        "ideal_ld_sectors": r.global_ld_bytes_requested / 32,
        "sectors_over_ideal_x": ratio,
    }


def _uncoalesced_by_model(r: LaunchRecord) -> Found | None:
    """Without the requested bytes: a stream's global sectors far beyond its model's bytes. A
    matmul re-reads its tiles from L2 by design, and sectors per request cannot tell a 128-bit
    load's ideal 16 from scattered lanes, so neither is judged by this route."""
    ld, model = r.global_ld_sectors, r.model_bytes
    if ld is None or not model or r.matrix:
        return None
    sector_bytes = (ld + (r.global_st_sectors or 0.0)) * SECTOR_BYTES
    if sector_bytes / model < th.UNCOALESCED_MODEL_RATIO:
        return None
    evidence = {"global_sector_bytes": sector_bytes, "bytes": model,
                "sectors_over_model_x": sector_bytes / model}  # fmt: skip
    if r.global_ld_requests:
        evidence["sectors_per_request_ratio"] = ld / r.global_ld_requests
    return Found(evidence, list(evidence))


def _scattered_atomics(r: LaunchRecord) -> Found | None:
    """Atomics at random addresses: each lane's update is its own L2 sector operation, so L2 runs
    at its high-throughput line while every slice's atomic unit is busy alike (no hot address:
    contention's own entry is the concentrated case). The zoo's scatter: 2^25 updates at random
    bins, L2 95%, its atomic units 59% busy on every slice, DRAM 17%."""
    busy_max, busy, l2 = r.l2_atomic_busy_max_pct, r.l2_atomic_busy_pct, r.l2_pct
    if not r.atomic_requests or busy is None or l2 is None or busy_max is None:
        return None
    if l2 < th.HIGH_THROUGHPUT_PCT or busy < th.ATOMIC_SLICE_BUSY_PCT:
        return None
    if busy_max / busy >= th.ATOMIC_CONCENTRATION_X:
        return None  # a hot address: contention
    evidence = {"atomic_requests": r.atomic_requests, "l2_throughput_pct": l2,
                "l2_atomic_busy_pct": busy}  # fmt: skip
    return Found(evidence, list(evidence), {"atomics": True})


def _divergence(r: LaunchRecord) -> dict | None:
    share = r.divergent_share
    if share is None or share < th.DIVERGENT_BRANCH_SHARE:
        return None
    out = {
        "branch_targets_divergent": r.branch_targets_divergent,
        "divergent_share_pct": share * 100,
    }
    return out


def _issue_bound(r: LaunchRecord) -> dict | None:
    issue, pipe = r.issue_active_pct, r.busiest_pipe
    if issue is None or issue < th.ISSUE_BOUND_PCT:
        return None
    if pipe is not None and pipe[1] >= th.PIPE_BUSY_PCT:
        return None  # a busy pipe is the limit: its own entry says which
    return {"issue_active_pct": issue}


def _memory_latency(r: LaunchRecord) -> dict | None:
    stall = r.dominant_stall
    if stall is None or stall[0] != "long_scoreboard" or stall[2] < th.DOMINANT_STALL_SHARE:
        return None
    if r.memory_pct is None or r.memory_pct >= th.LATENCY_BOUND_PCT:
        return None  # memory is busy: bandwidth, not latency
    return {
        "stall_long_scoreboard_pct": stall[1],
        "stall_share_pct": stall[2] * 100,
        "memory_throughput_pct": r.memory_pct,
    }


def _stall(r: LaunchRecord) -> Found | None:
    """The dominant stall (LaunchRecord.dominant_stall: one sum, one denominator) and the step
    its reason points to (stalls.ADVICE_TEXT). A memory-bound stream's stall that a sibling
    moving the same bytes faster waits on as much (its share at least this one's less a few
    points) does not explain the gap to it: what differs between the two is the step."""
    dominant = r.dominant_stall
    if dominant is None or dominant[2] < th.DOMINANT_STALL_SHARE:
        return None
    reason, value, share = dominant
    evidence = {f"stall_{reason}_pct": value, "stall_share_pct": share * 100}
    keys, detail = list(evidence), {"stall": reason}
    memory = r.bottleneck == Bottleneck.MEMORY
    faster = r.siblings.faster("bytes") if r.siblings and memory else None
    theirs = LaunchRecord.of(faster[0]).captured_stall_share(reason) if faster else None
    if theirs is not None and theirs * 100 >= share * 100 - th.STALL_SHARED_POINTS:
        evidence["sibling_stall_share_pct"] = theirs * 100
        detail["shared_with"] = str(faster[0].get("variant"))
        return Found(evidence, list(evidence), detail, (match("bytes"),))
    action = ADVICE_TEXT.get(reason, Action.OPEN_NCU)
    if r.matrix and reason in ("barrier", "long_scoreboard"):
        # in a tiled tl.dot loop these are the waits for the next stage's tiles, not a
        # reduction's barriers: the remedy is a deeper pipeline, not fewer block-wide syncs
        action = Action.DEEPER_PIPELINE
    step = Advice(action, keys, {"section": "WarpStateStats"} if action == Action.OPEN_NCU
                  else detail)  # fmt: skip
    return Found(evidence, keys, detail, (step,))


def _l2_reuse(r: LaunchRecord) -> dict | None:
    asked, dram = r.global_ld_bytes_requested, r.dram_bytes_read
    if not asked or not dram or asked < th.L2_REUSE_ASKED_X * dram:
        return None  # the loads ask for about what DRAM delivers: no re-reads
    return {
        "global_ld_bytes_requested": asked,
        "dram_bytes_read": dram,
        "asked_over_dram_x": asked / dram,
        **({"l2_hit_pct": r.l2_hit_pct} if r.l2_hit_pct is not None else {}),
    }


def _pipe(pipe: str) -> Callable[[LaunchRecord], dict | None]:
    def test(r: LaunchRecord) -> dict | None:
        busiest = r.busiest_pipe
        if busiest is None or busiest[0] != pipe or busiest[1] < th.PIPE_BUSY_PCT:
            return None
        return {f"{pipe}_pipe_pct": busiest[1]}

    return test


def _tensor(r: LaunchRecord) -> dict | Found | None:
    """The Tensor pipe. A kernel that is no matrix product: busy at its line, where it issues
    MMAs. A matrix product (GEMM advice fits it): busy, under-fed or unused. Library code gets
    its shapes, options or TF32 (a whole fused op such as attention: another backend first),
    never tile advice; a user matmul with too few tiles for the SMs is its grid's cause (more,
    smaller tiles, never larger ones); one on a busy pipe is pointed at a sibling doing the same
    FLOPs as fast, never told to do less math. The case's dtype and its share of the pipe's roof
    are the record's (diagnose puts them there)."""
    tensor, library = r.tensor_pct, r.owner == Owner.LIBRARY
    if not r.matrix:
        if r.mma_kind is None or tensor < th.TENSOR_BUSY_PCT:
            return None
        return {"tensor_any_pct": tensor, "mma_kind": r.mma_kind}
    # quoted under the field it was read from (the record's fields are their columns' names)
    key = "tensor_any_pct" if r.tensor_any_pct is not None else "tensor_pipe_pct"
    evidence, keys = {key: tensor}, [key]
    if tensor >= th.TENSOR_BUSY_PCT:
        if library:
            near = Advice(Action.LIBRARY_SHAPES, keys, {"near_roof": True})
            return Found(evidence, keys, steps=(near,))
        # a sibling doing the same FLOPs in the same or less time: less math is not the gap
        found = r.siblings.faster("flops") if r.siblings else None
        if found is not None:
            said = "faster" if found[1].outcome == "slower" else "same"
            return Found(evidence, keys, {"sibling": said}, (match("flops"),))
        return Found(evidence, keys, steps=(Advice(Action.LESS_MATH, keys),))
    if r.mma_kind is None and library:
        if r.dtype == "float32":
            tf32 = Advice(Action.USE_TF32, keys)
            return Found(evidence, keys, steps=(tf32,), cause=Cause.FP32_GEMM_ON_FMA)
        shapes = Advice(Action.LIBRARY_SHAPES, keys)
        return Found(evidence, keys, steps=(shapes,), cause=Cause.MATMUL_OFF_TENSOR)
    if library:  # on the Tensor Cores, short of busy: its shape, not its code
        lib = {"library": str(r.family)}
        if r.kind == KernelKind.ATTENTION:  # a whole fused op: another backend first
            step = Advice(Action.LIBRARY_OPTIONS, keys, {**lib, "whole_op": "attention"})
        else:
            step = Advice(Action.LIBRARY_SHAPES, keys)
        return Found(evidence, keys, lib, (step,), Cause.TENSOR_UNDERFED)
    if r.mma_kind is None:  # a user kernel with no MMA instructions at all
        cores = Advice(Action.USE_TENSOR_CORES, keys)
        if r.dtype == "float32":
            tf32 = Advice(Action.USE_TF32, keys)
            return Found(evidence, keys, {"fp32": True}, (tf32, cores), Cause.MATMUL_OFF_TENSOR)
        return Found(evidence, keys, steps=(cores,), cause=Cause.MATMUL_OFF_TENSOR)
    if r.grid_too_small:  # too few tiles for the SMs: larger tiles would make fewer still
        return replace(_small_grid(r), cause=Cause.SMALL_GRID)
    # it issues MMAs: under-fed when far below the pipe's roof (or, without the clock to compute
    # that roof, when the pipe is idle most cycles)
    roof = r.pipe_roof_pct
    if (roof is not None and roof < th.UNDERFED_ROOF_PCT) or (
        roof is None and tensor < th.TENSOR_BUSY_PCT / 2
    ):
        if roof is not None:
            evidence["pct_of_pipe_roof_pct"] = roof
        keys = list(evidence)
        feed = Advice(Action.FEED_TENSOR, keys)
        return Found(evidence, keys, steps=(feed,), cause=Cause.TENSOR_UNDERFED)
    busiest, pipe = r.busiest_pipe, busiest_pipe(r)
    if busiest is not None and busiest[0] != "tensor" and busiest[1] >= th.PIPE_BUSY_PCT:
        return None  # another pipe at its peak (a PIPE_BUSY entry): the story says it
    if r.bottleneck == Bottleneck.COMPUTE and pipe is not None and pipe[0] == Unit.TENSOR:
        # a user GEMM bound on the Tensor Cores short of their busy line: under-fed, judged on
        # the busy share (its roof share can sit in cuBLAS's range), said first; the dominant
        # stall, said after, tells how (the zoo's int8 GEMM: IMMA 69% busy, 67% of its roof,
        # barrier stalls at 63%). A library GEMM's shape is its user's lever: its cause says so
        feed = Advice(Action.FEED_TENSOR, keys)
        return Found(evidence, keys, {"busy": True}, (feed,), Cause.TENSOR_UNDERFED)
    return None


def _small_programs(r: LaunchRecord) -> dict | None:
    threads, waves = r.block_size, r.waves_per_sm
    achieved, theoretical = r.achieved_occupancy_pct, r.theoretical_occupancy_pct
    if threads is None or threads > th.SMALL_PROGRAM_THREADS or waves is None:
        return None
    if waves < th.SMALL_PROGRAM_WAVES or achieved >= th.LOW_OCCUPANCY_RATIO * theoretical:
        return None
    warps = math.ceil(threads / 32)
    capped = 100.0 * th.MAX_BLOCKS_PER_SM * warps / WARPS_PER_SM
    if theoretical > capped + 0.5:  # another limit (registers, shared memory) caps it lower
        return None
    return {
        "block_size": threads,
        "waves_per_sm": waves,
        "achieved_occupancy_pct": achieved,
        "theoretical_occupancy_pct": theoretical,
        "resident_block_cap_pct": capped,
    }


def _one_block_per_sm(r: LaunchRecord) -> Found | None:
    """One large program per SM at a time over several waves, with memory under ncu's latency
    line: each SM runs its programs one after another, and while one waits at its barriers and
    reductions no other program's loads are in flight (a one-program-per-row kernel of many
    warps: Liger's cross entropy, 32 warps, registers and warps allowing one block, DRAM 48%).
    A small block held alone is low theoretical occupancy (or shared memory's) instead."""
    blocks, waves = r.resident_blocks_per_sm, r.waves_per_sm
    theoretical = r.theoretical_occupancy_pct
    if round(blocks) != 1 or waves < th.ONE_BLOCK_WAVES:
        return None
    if round(theoretical, 1) <= th.LOW_THEORETICAL_OCCUPANCY_PCT or (
        r.memory_pct >= th.LATENCY_BOUND_PCT
    ):
        return None  # warps capped low: that entry's; memory busy: bandwidth, not loads in flight
    evidence = {"resident_blocks_per_sm": blocks, "block_size": r.block_size,
                "theoretical_occupancy_pct": theoretical, "waves_per_sm": waves,
                "memory_throughput_pct": r.memory_pct}  # fmt: skip
    detail = {"library": str(r.family)} if r.owner == Owner.LIBRARY else {}
    return Found(evidence, list(evidence), {"one_block": True, **detail})


def _shared_limits_occupancy(r: LaunchRecord) -> dict | None:
    """Shared memory per block is the tightest of the launch's occupancy limiters, and it caps
    theoretical occupancy low (ncu's launch__occupancy_limit_*: blocks per SM each resource
    allows)."""
    shared, theoretical = r.occupancy_limit_shared_mem, r.theoretical_occupancy_pct
    others = [v for v in (r.occupancy_limit_registers, r.occupancy_limit_warps,
                          r.occupancy_limit_blocks) if v is not None]  # fmt: skip
    if round(theoretical, 1) > th.LOW_THEORETICAL_OCCUPANCY_PCT or any(v <= shared for v in others):
        return None
    out = {
        "occupancy_limit_shared_mem": shared,
        "theoretical_occupancy_pct": theoretical,
    }
    if r.shared_mem_bytes is not None:
        out["shared_mem_bytes"] = r.shared_mem_bytes
    return out


def _atomic_ordering(r: LaunchRecord) -> dict | None:
    """Warps wait on memory barriers while the kernel issues atomics: each atomic's ordering
    (Triton's default sem="acq_rel") fences it, a cost relaxed atomics do not pay."""
    share = r.stall_share("membar")
    if not r.atomic_requests or share is None or share < th.DOMINANT_STALL_SHARE:
        return None
    return {
        "stall_membar_pct": r.stalls["membar"],
        "membar_stall_share_pct": share * 100,
        "atomic_requests": r.atomic_requests,
    }


def _weight_casts(r: LaunchRecord) -> dict | None:
    """Under autocast each weight is cast (a copy_ per weight) every step: the casts' launches
    and bytes repeat what casting the weights once would do."""
    casts = r.param_casts_per_step
    if not casts:
        return None
    return {"param_casts_per_step": casts}


def _launch_overhead(r: LaunchRecord) -> Found | None:
    """A chain of launches each lasting about what a launch costs: graphs remove the launches'
    cost, fusing removes the launches."""
    count, duration = r.kernel_count, r.duration_ms
    if duration is None or duration / count >= th.SHORT_KERNEL_MS:
        return None
    evidence = {"kernel_count": count, "mean_kernel_ms": duration / count}
    graph = Advice(Action.CUDA_GRAPH, list(evidence))
    return Found(evidence, list(evidence), steps=(graph, Advice(Action.FUSE, ["kernel_count"])))


def _small_grid(r: LaunchRecord) -> Found | None:
    """Under one wave at a cost (LaunchRecord.grid_too_small). A short one is a launch's cost; a
    matrix product's grid is refuted by a sibling as fast or faster on as few programs."""
    if not r.grid_too_small:
        return None
    ev = Evidence()  # the figures as quoted (a step's detail repeats them)
    ev.put("waves_per_sm", r.waves_per_sm)
    ev.put("wave_fill_pct", r.waves_per_sm * 100)
    grid = r.grid_size
    if grid is not None:
        ev.put("grid_size", grid)
        if r.sm_count and grid < r.sm_count:
            ev.put("sm_count", r.sm_count)
            ev.put("idle_sms", r.sm_count - int(grid))
    if r.is_short:
        ev.put("ncu_duration_ms", r.duration_ms)
        graph = Advice(Action.CUDA_GRAPH, ["ncu_duration_ms"])
        return Found(dict(ev), list(ev), {"short": True}, (graph,))
    if not r.matrix:
        return Found(dict(ev), list(ev), steps=(Advice(Action.MORE_PROGRAMS, list(ev)),))
    # a sibling as fast or faster on as few programs refutes "too few": the grid is not the
    # limit (cuBLAS at M = 128 ran 128 blocks, deeper pipelined, at 79.5% DRAM)
    rival = r.siblings.faster("programs") if r.siblings else None
    if rival is not None:
        other, c = rival
        ev.put("sibling_variant", str(other.get("variant")))
        ev.put("sibling_grid_size", LaunchRecord.of(other).grid_size)
        ev.put("sibling_time_share_pct", 100 / c.ratio)
        return Found(dict(ev), list(ev), {"matmul": True, "refuted": True}, ())
    # a matmul with too few tiles: more, smaller tiles (never larger ones), split-K or stream-K
    ev.put("dram_throughput_pct", r.dram_pct)
    detail = {"matmul": True, **{k: v for k, v in ev.items() if k != "wave_fill_pct"}}
    more = Advice(Action.MORE_PROGRAMS, list(ev), detail)
    return Found(dict(ev), list(ev), {"matmul": True}, (more,))


def _copy_roof(r: LaunchRecord) -> Found | None:
    """At the copy roof (only fewer bytes help: a chain's by fusing) or short of it. A case with
    timing is judged against the same-size copy (else the large one, saying so: copy_roof); a
    launch against ncu's DRAM peak. A case near the roof whose sibling moves as many bytes
    measurably faster is not at the roof: the copy is not the roof there.

    A case ncu calls latency-bound or balanced (a short stream) is judged against the same-size
    copy only: as fast as it, the copy's own fixed costs (launch, ramp, a partial wave) are the
    roof at this size, so the launch-shape and latency steps its counters point to would not
    make it faster; a copy shows the same (AT_SIZE_ROOF)."""
    figures, share = r.copy_roof
    faster = r.siblings.faster("bytes") if r.siblings else None
    if r.bottleneck in (Bottleneck.LATENCY, Bottleneck.BALANCED):
        if not r.copy_gbps_same_size or r.matrix or share is None or faster is not None:
            return None  # a faster sibling: the copy is not the roof
        if round(share, 6) < near_copy_line(r):
            return None
        keys = [k for k in ("pct_of_same_size_copy_pct", "pct_of_copy_pct") if k in figures]
        evidence = {k: figures[k] for k in keys}
        duration = r.duration_ms
        if duration is not None and duration < th.SHORT_KERNEL_MS:
            # a kernel this short is as fast as a copy because both are a launch: the launch is
            # the cost, and graphs or fusing it with its neighbours remove it, not fewer bytes
            evidence["ncu_duration_ms"] = duration
            graph = Advice(Action.CUDA_GRAPH, ["ncu_duration_ms"])
            return Found(evidence, list(evidence), {"launch": True}, (graph,), Cause.AT_SIZE_ROOF)
        step = Advice(Action.FEWER_BYTES, keys)
        return Found(evidence, keys, steps=(step,), cause=Cause.AT_SIZE_ROOF)
    evidence = {k: figures[k] for k in ("pct_of_same_size_copy_pct", "pct_of_copy_pct")
                if k in figures}  # fmt: skip
    if r.dram_pct is not None:
        evidence["dram_throughput_pct"] = r.dram_pct
    keys = list(evidence)
    if share is not None:
        at_roof = round(share, 6) >= near_copy_line(r)  # float noise: 94.9999999 is 95
    elif r.dram_pct is not None:
        at_roof = round(r.dram_pct, 6) >= th.NEAR_PEAK_DRAM_PCT
    else:
        return None
    if not at_roof:
        return Found(evidence, keys, steps=(), cause=Cause.SHORT_OF_ROOF)
    if faster is not None:
        return Found(evidence, keys, steps=(match("bytes"),), cause=Cause.SIBLING_FASTER)
    step = Advice(Action.FUSE if (r.kernel_count or 1) > 1 else Action.FEWER_BYTES, keys)
    return Found(evidence, keys, steps=(step,))


def _tail(r: LaunchRecord) -> dict | None:
    idle = r.tail_idle_share
    if idle is None or idle < th.TAIL_IDLE_SHARE:
        return None
    return {"waves_per_sm": r.waves_per_sm, "tail_idle_pct": round(idle * 100, 2)}


def _occupancy(r: LaunchRecord) -> tuple[float, float] | None:
    """Achieved and theoretical occupancy where the grid fills a wave (under one, the grid caps
    achieved occupancy itself: the small-grid cause says so)."""
    if r.grid_too_small:
        return None
    return r.achieved_occupancy_pct, r.theoretical_occupancy_pct


def _low_occupancy(r: LaunchRecord) -> dict | None:
    occ = _occupancy(r)
    if occ is None or occ[0] >= th.LOW_OCCUPANCY_RATIO * occ[1]:
        return None
    return {"achieved_occupancy_pct": occ[0], "theoretical_occupancy_pct": occ[1]}


def _low_theoretical(r: LaunchRecord) -> dict | None:
    occ = _occupancy(r)
    if occ is None or occ[0] < th.LOW_OCCUPANCY_RATIO * occ[1]:
        return None  # the achieved shortfall is the cause: _low_occupancy says it
    if round(occ[1], 1) > th.LOW_THEORETICAL_OCCUPANCY_PCT:  # 16 warps of 64 are too few too
        return None
    out = {"achieved_occupancy_pct": occ[0], "theoretical_occupancy_pct": occ[1]}
    if r.registers_per_thread is not None:
        out["registers_per_thread"] = r.registers_per_thread
    return out


def _short_kernel(r: LaunchRecord) -> dict | None:
    if r.grid_too_small or not r.is_short:  # the small-grid cause already weighs it
        return None
    return {"ncu_duration_ms": r.duration_ms}


def _extra_reads(r: LaunchRecord) -> Found | None:
    """DRAM reads well over what the case must read: the model's read bytes where the row has
    them, else the fewest any variant of the same case read (the measured one-pass floor)."""
    read, floor = r.dram_bytes_read, r.read_floor_bytes
    if not floor or read / floor < th.EXTRA_READS_RATIO:
        return None
    floor_key = "model_bytes_read" if r.model_bytes_read is not None else "fewest_bytes_read"
    evidence = {"dram_bytes_read": read, floor_key: floor, "dram_read_over_floor_x": read / floor}
    if r.dram_bytes_write is not None:
        evidence["dram_bytes_write"] = r.dram_bytes_write  # quoted, not judged: L2 holds some
    if (r.kernel_count or 1) > 1:  # a chain: its passes are EXTRA_PASSES' to judge
        evidence["kernel_count"] = r.kernel_count
    return Found(evidence, ["dram_bytes_read", floor_key, "dram_read_over_floor_x"])


def _extra_passes(r: LaunchRecord) -> dict | None:
    """A chain of kernels moving several times the model's bytes: each pass crosses DRAM."""
    dram, model = r.dram_bytes, r.model_bytes
    if not dram or not model or dram / model < th.EXCESS_DRAM_BYTES_RATIO:
        return None
    return {"kernel_count": r.kernel_count, "dram_bytes": dram, "bytes": model,
            "dram_over_model_x": dram / model}  # fmt: skip


def _cache_bound(r: LaunchRecord) -> Found | None:
    """The pressure is on L1/L2 or shared memory, not DRAM: ncu's memory throughput well above
    DRAM's; the busier cache level named where its throughput was captured."""
    dram, mem = r.dram_pct, r.memory_pct
    if mem - dram < th.CACHE_BOUND_GAP_PCT:
        return None
    evidence = {"memory_throughput_pct": mem, "dram_throughput_pct": dram}
    levels = [(getattr(r, f), u, f) for f, u in (("l2_pct", Unit.L2), ("l1_pct", Unit.L1))
              if getattr(r, f) is not None]  # fmt: skip
    level, col = "cache", "memory_throughput_pct"
    if levels:
        value, unit, name = max(levels, key=itemgetter(0))
        level, col = str(unit), LaunchRecord.column(name)
        evidence[col] = value
    # bound on a cache's own bandwidth: the data crosses that level more often than the work
    # needs, so keeping it on chip or moving fewer bytes is the step, not launch tuning
    return Found(evidence, [col, "dram_throughput_pct"], {"level": level})


def _bank_conflicts(r: LaunchRecord) -> dict | None:
    conflicts, wavefronts = r.shared_bank_conflicts, r.shared_wavefronts
    if not conflicts or not wavefronts or conflicts / wavefronts < th.BANK_CONFLICT_SHARE:
        return None
    return {
        "shared_bank_conflicts": conflicts,
        "shared_wavefronts": wavefronts,
        "bank_conflict_share_pct": conflicts / wavefronts * 100,
    }


def _bank_conflicts_minor(r: LaunchRecord) -> dict | None:
    """The replays are real but the stalls on shared memory hold little of the time."""
    stalled = r.stall_share("short_scoreboard", "mio_throttle")
    if stalled is None or stalled >= th.BANK_CONFLICT_STALL_SHARE:
        return None
    return {"shared_stall_share_pct": stalled * 100}


def _data_in_l2(r: LaunchRecord) -> dict | None:
    """DRAM bytes under the model's: writes still in L2 at the kernel's end (ncu flushes the
    caches before each launch, so reads all cross DRAM). Where the bytes missing from DRAM exceed
    every byte the kernel stored, no write left in L2 accounts for them: the model counts traffic
    the kernel did not make (Liger's cross entropy: 521 MB short of a 1.0 GB model that writes
    the gradient, 262 KB stored)."""
    dram, model = r.dram_bytes, r.model_bytes
    if not model or dram / model >= th.L2_RESIDENT_BYTES_RATIO:
        return None
    stored = r.global_st_sectors
    if stored is not None and model - dram > stored * SECTOR_BYTES:
        return None
    return {"dram_bytes": dram, "bytes": model, "dram_over_model_x": dram / model}


_OCCUPANCY = ("achieved_occupancy_pct", "theoretical_occupancy_pct")
_BUSY_PIPE = "the pipe's busy share under 80% of its peak, or another pipe busier"

CATALOGUE: tuple[Entry, ...] = (
    Entry(
        Cause.REGISTER_SPILLS,
        Unit.L1,
        ("local_ld_bytes", "local_st_bytes", "global_ld_sectors"),
        _spills,
        "local-memory bytes near zero (l1tex__t_bytes_pipe_lsu_mem_local_op_ld/st)",
        {KernelKind.ANY: Action.CUT_SPILLS},
        # the spilled values are the re-reads
        refutes=frozenset({Cause.EXTRA_READS}),
        rank=10,
    ),
    Entry(
        Cause.ATOMIC_CONTENTION,
        Unit.L2,
        ("global_atom_requests", "l2_atomic_busy_max_pct", "l2_atomic_busy_pct"),
        _atomic_contention,
        "L2 atomic units busy alike on every slice (max about avg): atomics spread over many "
        "addresses do not contend",
        {KernelKind.ANY: Action.PRIVATIZE_ATOMICS},
        rank=20,
    ),
    Entry(
        Cause.UNCOALESCED,
        None,
        ("global_ld_sectors", "global_ld_bytes_requested"),
        _uncoalesced,
        "sectors fetched about equal to the requested bytes / 32 (vectorized 128-bit loads "
        "fetch exactly 16 sectors per request)",
        {KernelKind.GATHER: Action.INDEX_LOCALITY, KernelKind.ANY: Action.COALESCE},
        # a strided read pulls whole sectors from DRAM: those are the extra reads
        refutes=frozenset({Cause.EXTRA_READS}),
        fallback=_uncoalesced_by_model,
    ),
    Entry(
        Cause.BRANCH_DIVERGENCE,
        None,
        ("branch_targets", "branch_targets_divergent"),
        _divergence,
        "few divergent branch targets; masked tails lower active lanes without divergence",
        {KernelKind.ANY: Action.UNIFORM_BRANCHES},
        rank=40,
    ),
    Entry(
        Cause.MEMORY_LATENCY,
        None,
        ("memory_pct",),
        _memory_latency,
        "memory throughput high (bandwidth, not latency), or another stall dominant",
        {KernelKind.ANY: Action.HIDE_LATENCY, KernelKind.GEMM: Action.DEEPER_PIPELINE},
    ),
    Entry(
        Cause.STALL,
        None,
        ("stalls",),  # none captured: no reason dominates (the story asks for a profile)
        _stall,
        "the stalls spread: no reason holds 30% of the stall cycles (not_selected left out)",
        {},  # the dominant reason's step (Found.steps)
    ),
    Entry(
        Cause.L2_REUSE,
        Unit.L2,
        ("global_ld_bytes_requested", "dram_bytes_read"),
        _l2_reuse,
        "the loads ask for about the bytes DRAM delivers: nothing is re-read from L2",
        # an elementwise or row kernel keeps the data on chip; a GEMM takes larger tiles
        {KernelKind.ANY: Action.FEWER_BYTES, KernelKind.GEMM: Action.FEED_TENSOR},
    ),
    Entry(
        Cause.TENSOR_BUSY,
        Unit.TENSOR,
        ("tensor_pct",),
        _tensor,
        "no MMA instructions (HFMA2.MMA constant moves only), or the pipe under 80%; a matrix "
        "product's near its roof",
        # a matrix product's steps are chosen by its evidence (Found.steps): busy, under-fed
        # or unused, by owner, dtype and its share of the roof
        {KernelKind.ANY: Action.LESS_MATH},
    ),
    *(
        Entry(
            Cause.PIPE_BUSY,
            unit,
            (col,),
            _pipe(pipe),
            _BUSY_PIPE,
            # elementwise math: cheaper math per element; integer/issue work, and a matrix
            # product's non-tensor pipe: fewer instructions
            {
                KernelKind.ANY: Action.CHEAPER_MATH
                if pipe in ("fma", "fp64", "xu")
                else Action.CUT_INSTRUCTIONS,
                KernelKind.GEMM: Action.CUT_INSTRUCTIONS,
            },
        )
        for pipe, unit, col in (
            ("fma", Unit.FMA, "fma_pipe_pct"),
            ("fp64", Unit.FP64, "fp64_pipe_pct"),
            ("alu", Unit.ALU, "alu_pipe_pct"),
            ("xu", Unit.XU, "xu_pipe_pct"),
            ("lsu", Unit.LSU, "lsu_pipe_pct"),
        )
    ),
    Entry(
        Cause.SMALL_PROGRAMS,
        Unit.LAUNCH,
        ("block_size", "waves_per_sm", "achieved_occupancy_pct", "theoretical_occupancy_pct"),
        _small_programs,
        "blocks of several warps, or theoretical occupancy capped by registers or shared memory "
        "rather than the resident-block limit, or achieved occupancy near theoretical",
        {KernelKind.ANY: Action.LARGER_PROGRAMS},
        # a program that ends as soon as it starts: its stalls and occupancy are its launch's
        refutes=frozenset({Cause.LOW_OCCUPANCY, Cause.TAIL, Cause.MEMORY_LATENCY, Cause.STALL}),
        rank=50,
    ),
    Entry(
        Cause.ONE_BLOCK_PER_SM,
        Unit.LAUNCH,
        ("resident_blocks_per_sm", "theoretical_occupancy_pct", "waves_per_sm", "memory_pct"),
        _one_block_per_sm,
        "two or more blocks resident per SM (ncu's occupancy limiters), or memory at or over "
        "ncu's latency line, or under two waves (the grid's shape is the cause)",
        # the user's Triton: smaller programs so several are resident (fewer warps, or the row
        # split over programs); code the user does not edit: its options, another backend
        {KernelKind.ANY: Action.MORE_PROGRAMS},
        owners={Owner.LIBRARY: Action.LIBRARY_OPTIONS, Owner.INDUCTOR: Action.COMPILER_OPTIONS},
        # one program's waits are the SM's: its stalls and latency are that program's alone
        refutes=frozenset({Cause.STALL, Cause.MEMORY_LATENCY}),
        # a matrix product holds one large tile per SM by design (its stalls say why it waits)
        kinds=frozenset(KernelKind) - MATRIX - {KernelKind.ANY},
        # an SM busy on its own work is no SM short of loads in flight
        bottlenecks=frozenset({Bottleneck.LATENCY, Bottleneck.MEMORY}),
        rank=55,
    ),
    Entry(
        Cause.SHARED_LIMITS_OCCUPANCY,
        Unit.LAUNCH,
        ("occupancy_limit_shared_mem", "theoretical_occupancy_pct"),
        _shared_limits_occupancy,
        "another limiter (registers, warps, blocks) as tight as shared memory, or theoretical "
        "occupancy above 25%",
        {KernelKind.ANY: Action.LESS_SHARED, KernelKind.GEMM: Action.LESS_SHARED},
        refutes=frozenset({Cause.LOW_THEORETICAL_OCCUPANCY}),
        rank=60,
    ),
    Entry(
        Cause.ATOMIC_ORDERING,
        None,
        ("atomic_requests", "membar_stall_share"),
        _atomic_ordering,
        "few memory-barrier stalls (under 30% of the stalls), or no atomics issued",
        {KernelKind.ANY: Action.RELAX_ATOMICS},
        refutes=frozenset({Cause.STALL}),
        rank=30,
    ),
    Entry(
        Cause.WEIGHT_CASTS,
        Unit.DRAM,
        ("param_casts_per_step",),
        _weight_casts,
        "the copies are of activations (their source changes each step), not of parameters",
        {KernelKind.ANY: Action.CAST_WEIGHTS_ONCE},
        kinds=frozenset({KernelKind.COPY}),
        rank=70,
    ),
    Entry(
        Cause.EXTRA_READS,
        Unit.DRAM,
        ("dram_bytes_read", "read_floor_bytes"),
        _extra_reads,
        "DRAM reads within 1.25x of the model's read bytes (or of the fewest-reading variant's); "
        "local-memory or uncoalesced traffic explains re-reads by itself",
        {KernelKind.ANY: Action.REMOVE_EXTRA_READS},
    ),
    Entry(
        Cause.EXTRA_PASSES,
        Unit.DRAM,
        ("kernel_count", "dram_bytes", "model_bytes"),
        _extra_passes,
        "DRAM bytes within 1.25x of the model's: the chain's intermediates stayed in L2",
        {KernelKind.ANY: Action.FUSE},
        chains=True,
    ),
    Entry(
        Cause.CACHE_BOUND,
        None,
        ("dram_pct", "memory_pct"),
        _cache_bound,
        "ncu's memory throughput within 10 points of DRAM's: DRAM is the busy level",
        {KernelKind.ANY: Action.FEWER_BYTES},
    ),
    Entry(
        Cause.BANK_CONFLICTS,
        Unit.L1,
        ("shared_bank_conflicts", "shared_wavefronts"),
        _bank_conflicts,
        "conflicts a small share of shared-memory wavefronts; or short-scoreboard and MIO stalls "
        "a small share of the stalls (then said, with no step)",
        {KernelKind.ANY: Action.PAD_SHARED},
        minor=_bank_conflicts_minor,
    ),
    Entry(
        Cause.DATA_IN_L2,
        Unit.L2,
        ("dram_bytes", "model_bytes"),
        _data_in_l2,
        "DRAM bytes at or above the model's: nothing stayed behind in L2; or fewer bytes stored "
        "than DRAM misses (the model counts writes the kernel did not make)",
        {KernelKind.ANY: None},  # a caveat on the DRAM figures, not a limit
    ),
    Entry(
        Cause.AT_ROOF,
        Unit.DRAM,
        ("dram_pct",),
        _copy_roof,
        "short of the copy roof (the same-size copy's, else the large copy's; ncu's DRAM peak "
        "for a launch); or a sibling moving as many bytes measurably faster",
        # fewer bytes, a chain's by fusing; a faster sibling's; short of it none; at the
        # same-size copy, fewer bytes or, a launch's cost, graphs (Found.steps)
        {},
        # without ncu's DRAM throughput (a case timed only), the copy roof judges it alone
        fallback=_copy_roof,
    ),
    Entry(
        Cause.LAUNCH_OVERHEAD,
        Unit.LAUNCH,
        ("kernel_count",),
        _launch_overhead,
        "the chain's launches each last well over a launch's cost",
        {},  # graphs, then fusing (Found.steps)
        chains=True,
    ),
    Entry(
        Cause.SMALL_GRID,
        Unit.LAUNCH,
        ("waves_per_sm",),
        _small_grid,
        "a wave or more with every SM holding a block; or, for a matrix product, a sibling as "
        "fast or faster on as few programs",
        {},  # a launch's cost, or more programs (Found.steps)
    ),
    Entry(
        Cause.TAIL,
        Unit.LAUNCH,
        ("waves_per_sm",),
        _tail,
        "whole waves, or a partial last wave leaving under a quarter of its slots idle",
        {KernelKind.ANY: Action.WHOLE_WAVES},
    ),
    Entry(
        Cause.LOW_OCCUPANCY,
        Unit.LAUNCH,
        _OCCUPANCY,
        _low_occupancy,
        "achieved occupancy at least half the theoretical, or a grid under one wave",
        {KernelKind.ANY: Action.BALANCE_WORK},
    ),
    Entry(
        Cause.LOW_THEORETICAL_OCCUPANCY,
        Unit.LAUNCH,
        _OCCUPANCY,
        _low_theoretical,
        "theoretical occupancy above 25%",
        # one large-tile CTA per SM is how tl.dot and cuBLAS kernels keep operands in registers
        # and shared memory: a fact, not the step (their stalls say which is)
        {KernelKind.ANY: Action.RAISE_OCCUPANCY, KernelKind.GEMM: None},
    ),
    Entry(
        Cause.SHORT_KERNEL,
        Unit.LAUNCH,
        ("duration_ms",),
        _short_kernel,
        "a kernel lasting well over a launch's cost, or a grid under one wave (its own cause)",
        {KernelKind.ANY: Action.CUDA_GRAPH},
    ),
    Entry(
        Cause.ISSUE_BOUND,
        None,
        ("issue_active_pct",),
        _issue_bound,
        "the schedulers idle a fair share of cycles, or one pipe at its peak",
        {KernelKind.ANY: Action.CUT_INSTRUCTIONS},
    ),
)


class Outcomes(list):
    """Every entry's Outcome on one record, in catalogue order, with what the engine reads of
    them decided once by evaluate: the first found outcome per cause, the causes found entries
    refute (Entry.refutes), and the causes that could not be judged (once each: pipes share one)."""

    found: dict[Cause, Outcome]
    # each entry's found outcome by the entry's own cause, where its judgment may end in another
    # (Found.cause: the Tensor pipe's ends in under-fed, unused, or its grid)
    by_entry: dict[Cause, Outcome]
    refuted: frozenset[Cause]
    not_measured: list[str]
    owner: Owner  # the record's: Entry.owners picks the remedy by it


def evaluate(rec: LaunchRecord) -> Outcomes:
    """Every entry that applies to the record's kind (Entry.kinds), judged once: not measured
    where a counter it needs is missing, else found or absent by its test."""
    out = Outcomes()
    for entry in CATALOGUE:
        if entry.kinds and rec.kind not in entry.kinds:
            continue
        if entry.bottlenecks and rec.bottleneck not in entry.bottlenecks:
            continue
        if entry.chains and (rec.kernel_count or 1) <= 1:
            continue
        missing = tuple(n for n in entry.needs if getattr(rec, n) is None)
        if missing:
            result = entry.fallback(rec) if entry.fallback else None
            if not result:
                out.append(Outcome(entry, "not measured", missing=missing))
                continue
        else:
            result = entry.test(rec)
        if isinstance(result, Found):
            out.append(Outcome(entry, "found", result.evidence, keys=result.keys,
                               detail=result.detail, steps=result.steps,
                               cause=result.cause))  # fmt: skip
            continue
        minor = entry.minor(rec) if result and entry.minor else None
        out.append(Outcome(entry, "found" if result else "absent", result or {}, minor=minor))
    out.owner = rec.owner
    out.found, out.by_entry = {}, {}
    for o in out:
        if o.status == "found":
            out.found.setdefault(o.cause or o.entry.cause, o)
            out.by_entry.setdefault(o.entry.cause, o)
    out.refuted = frozenset(c for o in out.found.values() for c in o.entry.refutes)
    out.not_measured = list(
        dict.fromkeys(str(o.entry.cause) for o in out if o.status == "not measured")
    )
    return out


def holds(rec: LaunchRecord, cause: Cause) -> bool:
    """Whether the entry of `cause` finds it on the record, where it applies to the record's kind
    and has its counters: asked where the bottleneck is decided (its overrides), before the
    entries are evaluated on the bottleneck they make."""
    entry = next(e for e in CATALOGUE if e.cause == cause)
    if entry.kinds and rec.kind not in entry.kinds:
        return False
    return all(getattr(rec, n) is not None for n in entry.needs) and bool(entry.test(rec))


# the entries said before any story from the SOL lines, in their declared order (Entry.rank)
RANKED = tuple(sorted((e for e in CATALOGUE if e.rank is not None), key=lambda e: e.rank))


def found(outcomes: Outcomes, cause: Cause) -> Outcome | None:
    return outcomes.found.get(cause)


def unit_of(outcomes: Outcomes, cause: Cause) -> Unit | None:
    """The unit a found specific cause (a ranked entry) limits, where its entry names one."""
    hit = outcomes.found.get(cause)
    return hit.entry.unit if hit is not None and hit.entry.rank is not None else None


def said(outcomes: Outcomes, cause: Cause, kernel: KernelKind, ev: Evidence) -> Said | None:
    """A cause found on the record and not refuted, with its evidence and its kind's remedy
    (Entry.remedy); None for one not found, or refuted (neither said nor quoted)."""
    hit = outcomes.found.get(cause)
    if hit is None or cause in outcomes.refuted:
        return None
    evidence = {**hit.evidence, **(hit.minor or {})}
    for key, value in evidence.items():
        ev.put(key, value)
    keys = hit.keys if hit.keys is not None else list(evidence)
    if hit.minor:
        return Reason(cause, keys, {"minor": True}), []
    if hit.steps is not None:
        return Reason(cause, keys, dict(hit.detail)), list(hit.steps)
    action = hit.entry.remedy(kernel, outcomes.owner)
    detail = {"pipe": str(hit.entry.unit)} if cause == Cause.PIPE_BUSY else dict(hit.detail)
    return Reason(cause, keys, detail), [Advice(action, keys, detail)] if action else []


# --- conflicts: a step that would contradict a cause found beside it ----------------------------


@dataclass(frozen=True)
class Conflict:
    """A step forbidden where a cause is found (or the record shows a condition): withheld, or
    replaced by the step that does answer that cause."""

    action: Action
    why: str  # the reason id the withheld step carries (ruled_out's "why")
    causes: frozenset[Cause] = frozenset()  # any of these found forbids the step
    kinds: frozenset[KernelKind] = frozenset()  # or the kernel is of one of these kinds
    test: Callable[[LaunchRecord], bool] | None = None  # or the record shows this
    instead: Action | None = None  # the step in its place (None: withheld)
    detail: str | None = None  # only a step carrying this detail key ("library": fuse it away)


def _under_one_wave(r: LaunchRecord) -> bool:
    return r.waves_per_sm is not None and r.waves_per_sm < th.SMALL_GRID_WAVES


CONFLICTS: tuple[Conflict, ...] = (
    # larger tiles hold more values per thread (more spills) and make fewer programs (a grid
    # under one wave leaves more SMs idle): the spills' and the grid's own steps answer them
    Conflict(Action.FEED_TENSOR, "spills", causes=frozenset({Cause.REGISTER_SPILLS})),
    Conflict(Action.FEED_TENSOR, "under_one_wave", test=_under_one_wave),
    # weight casts: casting once removes their launches and bytes; a graph would replay them
    Conflict(Action.CUDA_GRAPH, "weight_casts", causes=frozenset({Cause.WEIGHT_CASTS})),
    # programs too small to amortize their launch: latency is not what more loads in flight fix
    Conflict(Action.HIDE_LATENCY, "small_programs", causes=frozenset({Cause.SMALL_PROGRAMS})),
    Conflict(Action.BYTES_IN_FLIGHT, "small_programs", causes=frozenset({Cause.SMALL_PROGRAMS})),
    # a library kernel's "fuse it away": its atomics stay atomics after fusing, reducing before
    # them is what helps; a sort or a scan is a whole pass of its own that fusing does not remove
    # (a chain's "fuse the kernels into one", against launch overhead, stands)
    Conflict(
        Action.FUSE,
        "atomics",
        causes=frozenset({Cause.ATOMIC_CONTENTION}),
        kinds=frozenset({KernelKind.SCATTER_ATOMIC}),
        instead=Action.PRIVATIZE_ATOMICS,
        detail="library",
    ),
    Conflict(
        Action.FUSE,
        "not_fusible",
        kinds=frozenset({KernelKind.SORT, KernelKind.SCAN}),
        instead=Action.LIBRARY_OPTIONS,
        detail="library",
    ),
    # a chain whose launches are all library code (cuBLAS GEMMs and Liger's kernels: a fused
    # library op is the fused form already): the library's remedy, another backend, option or
    # formulation. A chain the user can fuse (their code, ATen's eager elementwise ops) keeps it
    Conflict(Action.FUSE, "library_chain", instead=Action.LIBRARY_OPTIONS, detail="library_chain"),
)


def resolve(
    steps: list[Advice], reasons: list[Reason], rec: LaunchRecord
) -> tuple[list[Advice], list[dict]]:
    """Each step against CONFLICTS: a step that contradicts a found cause (or the record) is
    withheld, with its reason, or replaced by the step that answers that cause. A conflict with a
    detail key holds only for a step carrying it; one naming no cause, kind or test is that
    detail alone."""
    found = {r.cause for r in reasons}
    kept: list[Advice] = []
    withheld: list[dict] = []
    for step in steps:
        hit = next(
            (c for c in CONFLICTS
             if c.action == step.action and (c.detail is None or c.detail in step.detail)
             and (bool(c.causes & found) or rec.kind in c.kinds
                  or (c.test is not None and c.test(rec))
                  or not (c.causes or c.kinds or c.test) and c.detail is not None)),
            None,
        )  # fmt: skip
        if hit is None:
            kept.append(step)
        elif hit.instead is not None:
            kept.append(
                Advice(hit.instead, step.because, {**step.detail, "instead_of": str(step.action)})
            )
        else:
            withheld.append({"action": str(step.action), "why": hit.why})
    return kept, withheld
