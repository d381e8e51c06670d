"""One typed record per launch (or per case), built once from a stored row: the counters the cause
catalogue reads, under names that say what they are, and the quantities derived from them
(sectors fetched against the ideal, local-memory bytes, pipe shares, L2 slice imbalance).

Every cause in profkit/explain/catalogue.py is a predicate on this record, and every module of
explain reads a launch's (or a case's) counters through it: the stored columns are named here only
(profkit/counters/metrics.py maps them to ncu's metrics). A finding quotes a field under its
column's name (LaunchRecord.column), the evidence key of the JSON schema. A field is None when its
counter was not collected (an older run, a report captured with other sections): the catalogue
then says "not measured", never guesses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache, cached_property
from operator import itemgetter
from typing import Protocol

from profkit import peaks
from profkit import thresholds as th
from profkit.explain.evidence import num, text
from profkit.explain.kernel_family import Family
from profkit.explain.kinds import MATRIX, KernelKind, Owner, kernel_kind, owner
from profkit.explain.model import Bottleneck
from profkit.stats import MedianRatio


class FasterSiblings(Protocol):
    """What the catalogue's tests ask of a case's siblings (explain.siblings.Siblings, which reads
    records: typed here by what it answers, so that the record does not import it back)."""

    def faster(self, same: str) -> tuple[Mapping, MedianRatio] | None: ...


SECTOR_BYTES = 32
WARPS_PER_SM = 64  # resident warps an SM holds: compute capability 8.0 and 9.0 (Programming Guide)

# record field -> stored column (the same name unless listed)
_COLUMNS = {
    "dram_pct": "dram_throughput_pct",
    "memory_pct": "memory_throughput_pct",
    "sm_pct": "sm_throughput_pct",
    "l1_pct": "l1_throughput_pct",
    "l2_pct": "l2_throughput_pct",
    "duration_ms": "ncu_duration_ms",
    "model_bytes": "bytes",
    "model_bytes_read": "bytes_read",
    "model_flops": "flops",
}


@dataclass(frozen=True)
class LaunchRecord:
    # --- what ran, who owns it, and its model ----------------------------------------------------
    name: str | None = None
    family: Family | None = None  # the caller's (a lab variant's own kernels are the user's)
    op: str | None = None  # the PyTorch op that launched it, where a profile recorded one
    shape: str | None = None
    dtype: str | None = None
    kernel_count: float | None = None
    duration_ms: float | None = None  # ncu's
    device_p50_ms: float | None = None  # the timing pass's
    model_bytes: float | None = None
    model_bytes_read: float | None = None
    model_flops: float | None = None
    copy_gbps_same_size: float | None = None  # the run's device copy of the case's own bytes
    copy_gbps: float | None = None  # the device's large copy (diagnose puts it on the record)
    # the achieved FLOP rate's share of its pipe's roof (roofs.compute_roof; diagnose puts it)
    pipe_roof_pct: float | None = None
    read_floor: float | None = None  # fewest DRAM bytes any variant of the same case read
    sm_clock_mhz: float | None = None  # sampled while the case was timed (NVML)
    ncu_sm_clock_mhz: float | None = None  # the counter pass's
    # --- speed of light ---------------------------------------------------------------------------
    dram_pct: float | None = None
    memory_pct: float | None = None
    sm_pct: float | None = None
    l1_pct: float | None = None
    l2_pct: float | None = None
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    dram_bytes: float | None = None
    dram_bytes_read: float | None = None
    dram_bytes_write: float | None = None
    # --- pipes ------------------------------------------------------------------------------------
    tensor_any_pct: float | None = None  # every MMA kind (older runs lack it)
    tensor_pipe_pct: float | None = None  # HMMA/HGMMA only
    tensor_imma_pct: float | None = None
    tensor_dmma_pct: float | None = None
    fma_pipe_pct: float | None = None
    alu_pipe_pct: float | None = None
    xu_pipe_pct: float | None = None
    lsu_pipe_pct: float | None = None
    fp64_pipe_pct: float | None = None
    hmma_inst: float | None = None
    gmma_inst: float | None = None
    imma_inst: float | None = None
    issue_active_pct: float | None = None
    inst_executed: float | None = None
    global_ld_inst: float | None = None
    global_st_inst: float | None = None
    # --- global and local memory ------------------------------------------------------------------
    global_ld_sectors: float | None = None
    global_ld_requests: float | None = None
    global_st_sectors: float | None = None
    global_ld_bytes_requested: float | None = None
    local_ld_bytes: float | None = None
    local_st_bytes: float | None = None
    shared_bank_conflicts: float | None = None
    shared_wavefronts: float | None = None
    # --- atomics ----------------------------------------------------------------------------------
    global_atom_requests: float | None = None
    global_red_requests: float | None = None
    l2_atomic_busy_max_pct: float | None = None
    l2_atomic_busy_pct: float | None = None
    # --- control flow -----------------------------------------------------------------------------
    branch_targets: float | None = None
    branch_targets_divergent: float | None = None
    # --- launch shape -----------------------------------------------------------------------------
    grid_size: float | None = None
    block_size: float | None = None
    registers_per_thread: float | None = None
    waves_per_sm: float | None = None
    shared_mem_bytes: float | None = None  # static + dynamic per block
    # blocks per SM each resource allows (launch__occupancy_limit_*; not yet captured)
    occupancy_limit_shared_mem: float | None = None
    occupancy_limit_registers: float | None = None
    occupancy_limit_warps: float | None = None
    occupancy_limit_blocks: float | None = None
    # a profile's parameter casts per step (a workload's copy_ of a weight; not yet recorded)
    param_casts_per_step: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    # --- the device, where a report's row carries it ------------------------------------------
    sm_count: float | None = None
    cc_major: float | None = None
    cc_minor: float | None = None
    # the run's device (diagnose puts them on the record, as the SM count): the FMA ridge's peak
    compute_capability: str | None = None
    gpu: str | None = None
    # --- stalls: reason -> share of active warps' cycles --------------------------------------
    stalls: Mapping[str, float] = field(default_factory=dict)
    # the case's other variants, where a test compares with them (diagnose puts them on the
    # record, as the device's SM count and the read floor; a launch's or a report's: None)
    siblings: FasterSiblings | None = field(default=None, compare=False, repr=False)
    # the bottleneck diagnose classified (profkit/explain/bottleneck.py), where a test reads it
    bottleneck: Bottleneck | None = None

    @staticmethod
    def column(name: str) -> str:
        """The stored column (and evidence key) a field is read from."""
        return _COLUMNS.get(name, name)

    @classmethod
    def of(cls, row: Mapping, family: Family | None = None) -> LaunchRecord:
        values = {name: num(row, column) for name, column in _numeric_fields()}
        stalls = {}
        for key in row:
            reason = _stall_reason(key)
            value = num(row, key) if reason else None
            if reason and value is not None:
                stalls[reason] = value
        return cls(
            name=text(row, "kernel_name") or text(row, "name"),
            shape=text(row, "shape"),
            dtype=text(row, "dtype"),
            family=family,
            op=text(row, "op"),
            stalls=stalls,
            **values,
        )

    # --- derived quantities, each from the fields above only -----------------------------------

    @property
    def has_counters(self) -> bool:
        """The speed-of-light lines a diagnosis starts from were captured."""
        memory = self.memory_pct if self.memory_pct is not None else self.dram_pct
        return memory is not None and self.sm_pct is not None

    @property
    def tensor_pct(self) -> float | None:
        """The Tensor pipe's busy share: every MMA kind where captured, else HMMA's (older runs)."""
        return self.tensor_any_pct if self.tensor_any_pct is not None else self.tensor_pipe_pct

    @property
    def ld_sectors_over_ideal(self) -> float | None:
        """Global-load sectors fetched over the fewest that the requested bytes need (1.0 is
        perfect: vectorized 128-bit loads fetch exactly their 16 sectors per request)."""
        if self.global_ld_sectors is None or not self.global_ld_bytes_requested:
            return None
        ideal = self.global_ld_bytes_requested / SECTOR_BYTES
        return self.global_ld_sectors / ideal if ideal else None

    @property
    def local_bytes(self) -> float | None:
        if self.local_ld_bytes is None and self.local_st_bytes is None:
            return None
        return (self.local_ld_bytes or 0.0) + (self.local_st_bytes or 0.0)

    @property
    def global_bytes(self) -> float | None:
        """Bytes global loads and stores fetched or wrote through L1 (sector granularity)."""
        if self.global_ld_sectors is None:
            return None
        return (self.global_ld_sectors + (self.global_st_sectors or 0.0)) * SECTOR_BYTES

    @property
    def local_share(self) -> float | None:
        """Local-memory bytes as a share of all L1 traffic to and from global and local memory."""
        local, glob = self.local_bytes, self.global_bytes
        if local is None or glob is None or local + glob <= 0:
            return None
        return local / (local + glob)

    @property
    def atomic_requests(self) -> float | None:
        if self.global_atom_requests is None and self.global_red_requests is None:
            return None
        return (self.global_atom_requests or 0.0) + (self.global_red_requests or 0.0)

    @property
    def read_floor_bytes(self) -> float | None:
        """What the case must read: the model's read bytes, else the measured one-pass floor."""
        return self.model_bytes_read if self.model_bytes_read is not None else self.read_floor

    @cached_property
    def copy_roof(self) -> tuple[dict[str, float | str], float | None]:
        """The case's model bytes over its device time against the large copy and a copy of the
        same size (the figures, by their evidence keys), and the share of the roof it is judged
        against: the same-size copy where the run measured one, unless it measured faster than
        the large copy; else the large copy. Nothing without timing or a copy."""
        min_bytes, ms = self.model_bytes, self.device_p50_ms
        if not min_bytes or not ms:
            return {}, None
        gbps = min_bytes / (ms * 1e-3) / 1e9
        out: dict[str, float | str] = {"achieved_gbps": gbps}
        large, same = self.copy_gbps, self.copy_gbps_same_size
        if large:
            out["copy_gbps"] = large
            out["pct_of_copy_pct"] = gbps / large * 100
        if same:
            out["copy_gbps_same_size"] = same
            out["pct_of_same_size_copy_pct"] = gbps / same * 100
            # a copy of these bytes measured faster than the large copy, which amortizes every
            # fixed cost: the two copies differ by their own noise, and the slower is the roof
            key = "pct_of_copy_pct" if large and same > large else "pct_of_same_size_copy_pct"
            return out, float(out[key])
        if large:
            out["same_size_roof"] = "unknown"
            return out, float(out["pct_of_copy_pct"])
        return out, None

    @property
    def grid_too_small(self) -> bool:
        """Under one wave at a cost: SMs without a block, or a quarter of one wave's slots empty
        (the device's SM count: diagnose puts it on the record)."""
        waves, grid = self.waves_per_sm, self.grid_size
        if waves is None or waves >= th.SMALL_GRID_WAVES:
            return False
        if grid is not None and self.sm_count and grid < self.sm_count:
            return True
        return 1 - waves >= th.TAIL_IDLE_SHARE

    @property
    def resident_blocks_per_sm(self) -> float | None:
        """Blocks an SM holds at once: the tightest of ncu's occupancy limiters where all four were
        captured, else theoretical occupancy's warps over one block's warps (the same figure:
        ncu's theoretical occupancy is the limiters' blocks times a block's warps)."""
        limits = (self.occupancy_limit_registers, self.occupancy_limit_warps,
                  self.occupancy_limit_shared_mem, self.occupancy_limit_blocks)  # fmt: skip
        if all(v is not None for v in limits):
            return min(limits)
        theoretical, threads = self.theoretical_occupancy_pct, self.block_size
        if theoretical is None or not threads:
            return None
        return theoretical / 100 * WARPS_PER_SM / math.ceil(threads / 32)

    @property
    def flop_per_byte(self) -> float | None:
        """The model's arithmetic intensity (None without a model)."""
        flops, moved = self.model_flops, self.model_bytes
        return flops / moved if flops and moved else None

    @property
    def fma_ridge_flop_per_byte(self) -> float | None:
        """The FLOP per byte at which the FMA pipe's peak (profkit.peaks, at the clock the case
        was timed at, else ncu's) and the device copy's rate meet: below it, no vector math is
        fast enough to be the bound. None without the device's rate, clock or copy."""
        clock = self.sm_clock_mhz or self.ncu_sm_clock_mhz
        peak = peaks.peak(self.compute_capability, "fp32_fma", self.sm_count, clock, self.gpu)
        if peak is None or not self.copy_gbps:
            return None
        return peak[0] / (self.copy_gbps * 1e9)

    @property
    def tail_idle_share(self) -> float | None:
        return tail_idle(self.waves_per_sm)

    @property
    def is_short(self) -> bool:
        """One launch lasting about what a launch costs."""
        count, duration = self.kernel_count, self.duration_ms
        return duration is not None and (count or 1) <= 1 and duration < th.SHORT_KERNEL_MS

    @property
    def membar_stall_share(self) -> float | None:
        """The memory-barrier stalls' share of the summed stalls (None where none was captured)."""
        return self.stall_share("membar") if "membar" in self.stalls else None

    @property
    def divergent_share(self) -> float | None:
        if self.branch_targets_divergent is None or not self.branch_targets:
            return None
        return self.branch_targets_divergent / self.branch_targets

    @property
    def tensor_subpipe(self) -> str | None:
        """The Tensor sub-pipe doing the work ('hmma', 'imma', 'dmma'), or None when no sub-pipe
        counter says: the busiest captured share at or above PIPE_IN_USE_PCT, else the most
        instructions (GMMA is Hopper's warpgroup MMA on the HMMA path; fp8 wgmma shows on the
        HMMA cycles counter, run ac8f22)."""
        shares = {
            p: v
            for p, v in (
                ("hmma", self.tensor_pipe_pct),
                ("imma", self.tensor_imma_pct),
                ("dmma", self.tensor_dmma_pct),
            )
            if v is not None
        }
        if shares:
            busiest = max(shares, key=shares.__getitem__)
            if shares[busiest] >= th.PIPE_IN_USE_PCT:
                return busiest
        counts: dict[str, float] = {}
        for p, v in (("hmma", self.hmma_inst), ("hmma", self.gmma_inst), ("imma", self.imma_inst)):
            if v is not None:
                counts[p] = counts.get(p, 0.0) + v
        if counts and max(counts.values()) > 0:
            return max(counts, key=counts.__getitem__)
        return None

    @cached_property
    def mma_kind(self) -> str | None:
        """Which Tensor Core instructions do the launch's math ('hmma', 'imma', 'dmma'; HMMA where
        no sub-pipe counter says), None when it issues none: the one MMA rule. IMMA or GMMA
        instructions counted, or an IMMA/DMMA sub-pipe in use, are MMAs. The tensor pipe's busy
        share alone also counts ptxas's HFMA2.MMA constant moves (up to 4.1% in torch.softmax,
        run a879b0, while its FMA pipe does more): MMAs out-work the FMA pipe there; where no FMA
        counter was captured, only a pipe busy TENSOR_IDLE_PCT of cycles is (ATen's elementwise
        kernels read up to 5.6% with none, run 4bc5)."""
        if self.imma_inst or self.gmma_inst:
            return self.tensor_subpipe or "hmma"
        subs = (self.tensor_imma_pct or 0.0, self.tensor_dmma_pct or 0.0)
        tensor, fma = self.tensor_pct, self.fma_pipe_pct
        if max(subs) >= th.PIPE_IN_USE_PCT:
            mma = True
        elif tensor is None:
            mma = False
        elif fma is None:
            mma = tensor >= th.TENSOR_IDLE_PCT
        else:
            mma = tensor >= th.TENSOR_UNUSED_PCT and tensor >= fma
        return (self.tensor_subpipe or "hmma") if mma else None

    @cached_property
    def kind(self) -> KernelKind:
        """What the kernel is (profkit.explain.kinds.kernel_kind: the one rule)."""
        atomics = self.atomic_requests
        return kernel_kind(self.name, self.family, self.mma_kind is not None, self.matmul_shaped,
                           self.op, None if atomics is None else atomics > 0)  # fmt: skip

    @property
    def owner(self) -> Owner:
        return owner(self.family)

    @property
    def matrix(self) -> bool:
        """A matrix product (GEMM, convolution, attention): GEMM advice fits it."""
        return self.kind in MATRIX

    @property
    def pipes(self) -> dict[str, float]:
        """Busy share per SM pipe, the captured ones only (unit name -> percent)."""
        out = {
            "tensor": self.tensor_pct,
            "fma": self.fma_pipe_pct,
            "alu": self.alu_pipe_pct,
            "xu": self.xu_pipe_pct,
            "lsu": self.lsu_pipe_pct,
            "fp64": self.fp64_pipe_pct,
        }
        if self.mma_kind is None:  # constant moves on the tensor pipe are not its work
            out.pop("tensor")
        return {k: v for k, v in out.items() if v is not None}

    @property
    def busiest_pipe(self) -> tuple[str, float] | None:
        pipes = self.pipes
        return max(pipes.items(), key=itemgetter(1)) if pipes else None

    @property
    def dominant_stall(self) -> tuple[str, float, float] | None:
        """(reason, percent, share of the summed stalls), 'not selected' and 'selected' left out:
        a warp not selected had an eligible peer, and a selected one issued."""
        stalls, total = self._counted_stalls()
        if not total:
            return None
        reason, value = max(stalls.items(), key=itemgetter(1))
        return reason, value, value / total

    def stall_share(self, *reasons: str) -> float | None:
        """The share of the summed stalls ('not selected' and 'selected' left out) that these
        reasons hold; None where no stall was captured."""
        stalls, total = self._counted_stalls()
        return sum(stalls.get(r, 0.0) for r in reasons) / total if total else None

    def captured_stall_share(self, reason: str) -> float | None:
        """`reason`'s share of the summed stalls (stall_share), None where that reason was not
        captured."""
        return self.stall_share(reason) if reason in self.stalls else None

    def _counted_stalls(self) -> tuple[dict[str, float], float]:
        """The stall reasons that count against a warp, and their sum (0 when none was)."""
        stalls = {r: v for r, v in self.stalls.items() if r not in ("not_selected", "selected")}
        total = sum(stalls.values())
        return stalls, (total if stalls and total > 0 else 0.0)

    @property
    def matmul_shaped(self) -> bool:
        """The model is a matrix product's: an MxNxK (or batched) shape whose FLOPs are 2MNK."""
        if not self.shape or not self.model_flops:
            return False
        dims = [int(d) for d in re.findall(r"\d+", self.shape)]
        if len(dims) < 3:
            return False
        product = 1
        for d in dims:
            product *= d
        return abs(self.model_flops - 2 * product) <= 1e-6 * self.model_flops


def tail_idle(waves: float | None) -> float | None:
    """The share of block slots the partial last wave leaves idle (None under one wave)."""
    if waves is None or waves < th.SMALL_GRID_WAVES:
        return None
    slots = math.ceil(round(waves, 6))  # 2.0000001 waves is two whole waves, not three
    return (slots - waves) / slots


_STALL = re.compile(r"stall_(\w+)_pct")


@cache
def _stall_reason(key: object) -> str | None:
    """The stall reason a column holds (stall_<reason>_pct), None for any other column: asked
    for every column of every row, so answered once per column name."""
    match = _STALL.fullmatch(str(key))
    return match.group(1) if match else None


@cache
def _numeric_fields() -> tuple[tuple[str, str], ...]:
    """(field, stored column) of each number a record reads from a row: explain builds thousands
    of records per run, and dataclasses.fields is slow to ask each time."""
    text_fields = ("name", "family", "op", "shape", "dtype", "stalls", "siblings", "bottleneck",
                   "compute_capability", "gpu")  # fmt: skip
    return tuple(
        (f.name, LaunchRecord.column(f.name))
        for f in fields(LaunchRecord)
        if f.name not in text_fields
    )
