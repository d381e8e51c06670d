"""A launch's bottleneck: Nsight Compute's speed-of-light decision (SOLBottleneck), then the
overrides its other counters make to it, as a table read in order (OVERRIDES). An override
records the line it overrode as `sol_bottleneck`, so the finding can quote ncu's reading.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from profkit import thresholds as th
from profkit.explain import catalogue
from profkit.explain.evidence import Evidence
from profkit.explain.kinds import KernelKind, Owner
from profkit.explain.model import Bottleneck, Cause
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import busiest_pipe


def classify(memory_pct: float, sm_pct: float) -> Bottleneck:
    """Nsight Compute's SOLBottleneck decision: memory, compute, latency or balanced."""
    if memory_pct >= th.HIGH_THROUGHPUT_PCT or sm_pct >= th.HIGH_THROUGHPUT_PCT:
        return Bottleneck.COMPUTE if sm_pct >= memory_pct else Bottleneck.MEMORY
    if memory_pct < th.LATENCY_BOUND_PCT and sm_pct < th.LATENCY_BOUND_PCT:
        return Bottleneck.LATENCY
    # counters carry float noise (65.3 - 55.3 = 9.99...): compare the gap at micro-point resolution
    if round(abs(sm_pct - memory_pct), 6) >= th.SOL_GAP_PCT:
        return Bottleneck.COMPUTE if sm_pct > memory_pct else Bottleneck.MEMORY
    return Bottleneck.BALANCED


def _tensor_busy(rec: LaunchRecord, ev: Evidence) -> bool:
    """A Tensor pipe at or over its busy line is the limit: the L1/shared traffic that ncu's SOL
    weighs above the SM's is the MMAs' own operand feed, not a separate memory bound."""
    tensor = rec.tensor_pct
    return tensor is not None and tensor >= th.TENSOR_BUSY_PCT


def _memory_queues_full(rec: LaunchRecord, ev: Evidence) -> bool:
    """Under ncu's latency line on both SOL lines, yet a memory level at its high-throughput line
    and the warps waiting on full memory queues: the memory system refuses more requests, so it
    is the bound (a kernel short of loads in flight never fills those queues). ncu's SOL memory
    line does not count all of L2's work: a random 4-byte gather ran L2 at 87.6% under 59.85%."""
    queued = rec.stall_share("lg_throttle", "mio_throttle")
    levels = [(LaunchRecord.column(f), getattr(rec, f)) for f in ("l1_pct", "l2_pct")]
    levels = [(c, v) for c, v in levels if v is not None]
    if queued is None or not levels:
        return False
    col, busy = max(levels, key=itemgetter(1))
    if queued < th.MEMORY_QUEUE_STALL_SHARE or busy < th.HIGH_THROUGHPUT_PCT:
        return False
    ev.put("queue_level", col.split("_")[0].upper())
    ev.put("queue_level_pct", busy)
    ev.put("memory_queue_stall_share_pct", queued * 100)
    return True


def _matmul_on_its_math(rec: LaunchRecord, ev: Evidence) -> bool:
    """A user's matrix product whose time goes to its math, though SOL's lines say latency,
    balanced or memory: its Tensor pipe at or over ncu's latency line (the zoo's tl.dot GEMMs:
    62% and 60% busy, their warps at block barriers between K tiles), or, issuing no MMAs, its
    memory line from L1/shared well above DRAM (the FMA loop's own operand feed: the zoo's ieee
    fp32 tl.dot, L1 86% and DRAM 1%). Library GEMMs keep SOL's reading: their shapes decide."""
    if rec.kind != KernelKind.GEMM or rec.owner == Owner.LIBRARY:
        return False
    tensor = rec.tensor_pct
    if rec.mma_kind is not None:
        return tensor is not None and tensor >= th.LATENCY_BOUND_PCT
    l1, l2, dram = rec.l1_pct, rec.l2_pct, rec.dram_pct
    if l1 is None or dram is None or rec.memory_pct is None:
        return False
    return l1 >= (l2 or 0.0) and rec.memory_pct - dram >= th.CACHE_BOUND_GAP_PCT


def _waits_on_memory(rec: LaunchRecord, ev: Evidence) -> bool:
    """SOL's SM line at or over the memory line, yet no pipe near its busy line (the SM line is
    the schedulers' issue rate: index math and conversions) while the warps wait mostly on global
    memory: the time goes to memory (ATen's layer norm: SM 73% from issue, ALU 40%, long
    scoreboard 56% of the stalls; Liger's GEGLU at 91% of the copy rate, "balanced")."""
    pipe, stall = busiest_pipe(rec), rec.dominant_stall
    if pipe is None or stall is None or pipe[2] >= th.PIPE_BUSY_PCT:
        return False
    if (rec.tensor_pct or 0.0) >= th.TENSOR_BUSY_PCT or rec.matrix:
        return False  # a matrix product's SOL is its MMAs' feed: its own rules read it
    if stall[0] != "long_scoreboard" or stall[2] < th.DOMINANT_STALL_SHARE:
        return False
    ev.put("stall_long_scoreboard_pct", stall[1])
    ev.put("stall_share_pct", stall[2] * 100)
    return True


def _streams_one_program_per_sm(rec: LaunchRecord, ev: Evidence) -> bool:
    """Under both SOL lines, yet the time goes to streaming DRAM: its DRAM line at or over its SM
    line, its model's FLOP per byte far under the FMA ridge (no pipe can be the bound), and one
    program per SM (the catalogue's entry), which cannot keep enough loads in flight to reach
    the latency line. Liger's cross entropy: DRAM 48%, SM 44%, 1.5 FLOP/B against a 15.5 ridge,
    one 32-warp program per SM."""
    ridge, intensity, dram = rec.fma_ridge_flop_per_byte, rec.flop_per_byte, rec.dram_pct
    if ridge is None or intensity is None or dram is None or dram < rec.sm_pct:
        return False
    if intensity >= th.STREAM_RIDGE_FRACTION * ridge:
        return False
    if not catalogue.holds(rec, Cause.ONE_BLOCK_PER_SM):
        return False
    ev.put("flop_per_byte", intensity)
    ev.put("fma_ridge_flop_per_byte", ridge)
    return True


_ALL = frozenset(Bottleneck)
# (the bottlenecks it overrides, its test, the bottleneck it makes): read in this order, each on
# the bottleneck the overrides before it left
OVERRIDES: tuple[
    tuple[frozenset[Bottleneck], Callable[[LaunchRecord, Evidence], bool], Bottleneck], ...
] = (
    (_ALL - {Bottleneck.COMPUTE}, _tensor_busy, Bottleneck.COMPUTE),
    (frozenset({Bottleneck.LATENCY}), _memory_queues_full, Bottleneck.MEMORY),
    (_ALL - {Bottleneck.COMPUTE}, _matmul_on_its_math, Bottleneck.COMPUTE),
    (frozenset({Bottleneck.COMPUTE, Bottleneck.BALANCED}), _waits_on_memory, Bottleneck.MEMORY),
    (frozenset({Bottleneck.LATENCY}), _streams_one_program_per_sm, Bottleneck.MEMORY),
)


def bottleneck(rec: LaunchRecord, ev: Evidence) -> Bottleneck | None:
    """SOL's decision on the record, then OVERRIDES; None where the record has no SOL lines.
    Puts the SOL lines read (and each override's evidence) in `ev`."""
    mem, mem_key = rec.memory_pct, "memory_throughput_pct"
    if mem is None:
        mem, mem_key = rec.dram_pct, "dram_throughput_pct"
    if mem is None or rec.sm_pct is None:
        return None
    ev.put(mem_key, mem)
    ev.put("sm_throughput_pct", rec.sm_pct)
    kind = classify(mem, rec.sm_pct)
    for overridden, test, made in OVERRIDES:
        if kind in overridden and test(rec, ev):
            ev.put("sol_bottleneck", str(kind))
            kind = made
    return kind
