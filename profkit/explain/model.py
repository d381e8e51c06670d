"""What explain decides, as data: enums for the bottleneck, the limiting unit, the cause, the
verdict and the next step, and the dataclasses that carry them with their evidence.

Nothing here writes English, and nothing here imports what does: `profkit.explain.phrases` turns
each finding, cause and next step into words, `profkit.explain.as_json` writes a report in the
JSON schema documented in docs/explain-schema.md (SCHEMA_VERSION), and `profkit.explain.render`
lays findings out for a terminal or markdown.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

SCHEMA_VERSION = 2


class FindingKind(StrEnum):
    VERDICT = "verdict"  # one per lab variant of a kernel, across the sweep
    CASE = "case"  # one per case (kernel, variant, dtype, shape)
    HOST = "host"  # a case whose host cost per call exceeds its device time
    LAUNCH = "launch"  # one per kernel launch of a bare .ncu-rep report
    HISTORY = "history"  # what changed against the kernel's earlier run
    ITERATIONS = "steps"  # one per variant of a decode run (its timed iterations): the latency
    # distribution (the JSON keeps the value "steps")


class Bottleneck(StrEnum):
    MEMORY = "memory"
    COMPUTE = "compute"
    LATENCY = "latency"
    BALANCED = "balanced"
    HOST = "host"


class Unit(StrEnum):
    """The unit that limits: a memory level, an SM pipe, or neither (launch shape, the host)."""

    DRAM = "dram"
    L2 = "l2"
    L1 = "l1"  # L1/TEX and shared memory
    TENSOR = "tensor"
    FMA = "fma"
    ALU = "alu"
    XU = "xu"
    LSU = "lsu"
    FP64 = "fp64"
    LAUNCH = "launch"  # grid, waves, occupancy, short kernels
    HOST = "host"


class Cause(StrEnum):
    AT_ROOF = "at_roof"  # streams at about a same-size copy's rate
    AT_SIZE_ROOF = "at_size_roof"  # not a DRAM stream, yet as fast as a copy of its bytes
    SHORT_OF_ROOF = "short_of_roof"  # memory-bound, below the copy roof
    CACHE_BOUND = "cache_bound"  # the busy memory level is L1/L2, not DRAM
    EXTRA_READS = "extra_reads"  # DRAM reads well over the model's (or a sibling's)
    EXTRA_PASSES = "extra_passes"  # several kernels each crossing DRAM
    DATA_IN_L2 = "data_in_l2"  # DRAM bytes under the model: writes left in L2
    UNCOALESCED = "uncoalesced"  # global sectors fetched far beyond the bytes used
    BANK_CONFLICTS = "bank_conflicts"  # shared-memory wavefronts serialized
    TENSOR_BUSY = "tensor_busy"  # Tensor pipe near its rate
    PIPE_BUSY = "pipe_busy"  # a non-tensor pipe near its rate
    FP32_GEMM_ON_FMA = "fp32_gemm_on_fma"  # a library GEMM in fp32 on the FMA pipe (no TF32)
    MATMUL_OFF_TENSOR = "matmul_off_tensor"  # user matmul-like kernel not on the Tensor Cores
    TENSOR_UNDERFED = "tensor_underfed"  # a matmul on the Tensor Cores far below their roof
    SMALL_GRID = "small_grid"
    # programs too small to amortize their launch: the SMs' resident-block limit caps the warps
    SMALL_PROGRAMS = "small_programs"
    # shared memory per block is the tightest occupancy limiter (launch__occupancy_limit_*)
    SHARED_LIMITS_OCCUPANCY = "shared_limits_occupancy"
    # one large program per SM at a time (the resident-block limit holds one): while it waits at
    # its barriers and reductions no other program's loads are in flight
    ONE_BLOCK_PER_SM = "one_block_per_sm"
    # memory-barrier stalls from atomics' ordering (Triton's default sem="acq_rel")
    ATOMIC_ORDERING = "atomic_ordering"
    # a cast (copy_) per weight per step under autocast
    WEIGHT_CASTS = "weight_casts"
    TAIL = "tail"
    LOW_OCCUPANCY = "low_occupancy"
    LOW_THEORETICAL_OCCUPANCY = "low_theoretical_occupancy"
    LAUNCH_OVERHEAD = "launch_overhead"
    SHORT_KERNEL = "short_kernel"
    STALL = "stall"  # the dominant warp stall reason (evidence: stall, stall_pct)
    # the cause catalogue's entries beyond the SOL story (profkit/explain/catalogue.py)
    REGISTER_SPILLS = "register_spills"  # local-memory traffic from spilled registers
    ATOMIC_CONTENTION = "atomic_contention"  # global atomics serialized on a few L2 addresses
    BRANCH_DIVERGENCE = "branch_divergence"  # lanes of a warp taking different branch targets
    MEMORY_LATENCY = "memory_latency"  # long-scoreboard waits with too few loads in flight
    L2_REUSE = "l2_reuse"  # the working set is served from L2: DRAM moves less than the model
    ISSUE_BOUND = "issue_bound"  # the schedulers issue nearly every cycle: too many instructions
    NO_CAUSE_SEEN = "no_cause_seen"
    HOST_BOUND = "host_bound"
    NO_COUNTERS = "no_counters"
    INCORRECT = "incorrect"
    UNTIMED = "untimed"
    TIME_IN_LAUNCHES = "time_in_launches"  # a multi-kernel case: where its time goes
    # near the copy roof, yet a sibling variant of the same case moves as many bytes measurably
    # faster: the copy is not the roof at that size
    SIBLING_FASTER = "sibling_faster"
    THROTTLED = "throttled"  # the case (or the cases a verdict rests on) ran at reduced clocks
    # step-latency runs (decode): the distribution, the probes' tail stage, dynamic padding
    ITERATION_LATENCY = "step_latency"
    TAIL_STAGE = "tail_stage"
    PADDING = "padding"


class Verdict(StrEnum):
    WIN = "win"
    ACTIVE_TRACK = "active track"
    NOT_A_WIN = "not a win"
    NO_BASELINE = "no baseline"
    CORRECTNESS_ONLY = "correctness run"


class Action(StrEnum):
    """A next step, by what it asks for; its words live in phrases.ADVICE_TEXT."""

    FEWER_BYTES = "fewer_bytes"  # fuse, reuse on chip: at the roof
    FUSE = "fuse"  # a chain of kernels: fuse them
    REMOVE_EXTRA_READS = "remove_extra_reads"
    BYTES_IN_FLIGHT = "bytes_in_flight"  # more loads outstanding per thread
    WIDER_LOADS = "wider_loads"  # 128-bit loads
    RAISE_OCCUPANCY = "raise_occupancy"  # cut registers / shared memory per block
    BALANCE_WORK = "balance_work"
    MORE_PROGRAMS = "more_programs"  # split work so every SM gets some
    WHOLE_WAVES = "whole_waves"
    CUDA_GRAPH = "cuda_graph"  # host-bound, launch overhead
    COALESCE = "coalesce"
    PAD_SHARED = "pad_shared"
    USE_TF32 = "use_tf32"
    USE_TENSOR_CORES = "use_tensor_cores"  # tl.dot, user kernels only
    FEED_TENSOR = "feed_tensor"  # larger tiles, more pipeline stages: user matmuls
    LESS_MATH = "less_math"  # at the tensor roof: lower precision, less work
    LIBRARY_SHAPES = "library_shapes"  # a library kernel: shapes/precision/fusion
    LIBRARY_OPTIONS = "library_options"  # a Liger op: its options, a fused op, another kernel
    COMPILER_OPTIONS = "compiler_options"  # torch.compile's generated code: its inputs, options
    CUT_INSTRUCTIONS = "cut_instructions"
    HIDE_LATENCY = "hide_latency"  # long scoreboard: prefetch, more independent loads
    FEWER_BARRIERS = "fewer_barriers"
    DEEPER_PIPELINE = "deeper_pipeline"  # a tl.dot loop waiting on its stage buffers
    SHARED_PRESSURE = "shared_pressure"  # mio throttle
    ILP = "ilp"  # short scoreboard / wait: more independent work
    PROFILE_STALLS = "profile_stalls"  # capture WarpStateStats
    CAPTURE_COUNTERS = "capture_counters"
    FIX_CORRECTNESS = "fix_correctness"
    OPEN_NCU = "open_ncu"  # a section of Nsight Compute to read
    MATCH_SIBLING = "match_sibling"  # a sibling does the same work faster: see what differs
    CUT_SPILLS = "cut_spills"  # fewer live values per thread: more warps, smaller blocks
    PRIVATIZE_ATOMICS = "privatize_atomics"  # per-program/shared partial results, merged once
    LARGER_PROGRAMS = "larger_programs"  # more work per program: fewer, larger blocks
    LESS_SHARED = "less_shared"  # fewer stages or smaller tiles: less shared memory per block
    RELAX_ATOMICS = "relax_atomics"  # sem="relaxed" where no ordering is needed
    CAST_WEIGHTS_ONCE = "cast_weights_once"  # keep a low-precision copy of the weights
    UNIFORM_BRANCHES = "uniform_branches"  # make branch conditions warp-uniform (sort, split)
    INDEX_LOCALITY = "index_locality"  # a gather: sort or bucket indices, gather wider rows
    CHEAPER_MATH = "cheaper_math"  # an elementwise compute chain: precision, algebra, fast math
    # a training step's groups by what they are (profkit.workload.op_class)
    WEIGHT_CASTS = "weight_casts"  # autocast's per-step casts of fp32 weights: keep a bf16 copy
    FOLD_CASTS = "fold_casts"  # a widening cast: fold it into the kernel that reads it
    OPTIMIZER_STATE = "optimizer_state"  # a fused optimizer: precision, lower-traffic state
    FUSED_OPTIMIZER = "fused_optimizer"  # a foreach optimizer: fused=True, then as above
    FUSED_LINEAR_CE = "fused_linear_ce"  # cross-entropy on materialized logits: fused linear+CE
    NORM_NEIGHBOURS = "norm_neighbours"  # a norm, one kernel already: fuse with its neighbours
    ACTIVATION_EPILOGUE = "activation_epilogue"  # an activation: into the matmul's epilogue
    ALIGN_GEMM = "align_gemm"  # a GEMM on CUTLASS's unaligned fallback: pad the odd dimension
    BIAS_GRADS = "bias_grads"  # backward's sums (bias gradients): into the GEMM, compile, no bias


@dataclass
class Advice:
    """Next-step advice: what to change (its action) and the evidence keys (of the finding that
    carries it) that support it. "Step" is the profiled program's step; this is advice."""

    action: Action
    because: list[str] = field(default_factory=list)
    detail: dict = field(default_factory=dict)  # words' parameters: {"section": ...}


@dataclass
class Reason:
    """One cause the counters show, with the evidence keys it reads."""

    cause: Cause
    keys: list[str] = field(default_factory=list)
    detail: dict = field(default_factory=dict)


@dataclass
class RuleResult:
    """One of Nsight Compute's guided-analysis results, kept, and judged."""

    rule: str  # "AchievedOccupancy"
    section: str
    type: str  # OPTIMIZATION | WARNING
    message: str
    speedup_pct: float | None = None
    launch: int | None = None
    title: str = ""  # NVIDIA's headline ("Tail Effect")
    suppressed: str | None = None  # why profkit sets it aside (a reason id), None when kept
    note: dict = field(default_factory=dict)  # figures behind the suppression

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "section": self.section,
            "type": self.type,
            "title": self.title,
            "message": self.message,
            "speedup_pct": plain(self.speedup_pct),
            "launch": self.launch,
            "suppressed": self.suppressed,
            "note": {k: plain(v) for k, v in self.note.items()},
        }


@dataclass
class Launch:
    """One kernel launch of a case: its share of the case's time and its own bottleneck."""

    launch: int | None
    name: str  # demangled, shortened
    family: str  # kernel_family.Family value
    case: str | None
    share_pct: float | None
    bottleneck: Bottleneck | None
    unit: Unit | None
    evidence: dict = field(default_factory=dict)
    reasons: list[Reason] = field(default_factory=list)


@dataclass
class BaselineComparison:
    """A lab case against a baseline at one dtype and shape, on device time."""

    dtype: str
    shape: str
    baseline: str
    ratio: float  # lab median / baseline median: < 1 is faster
    ci_low: float
    ci_high: float
    outcome: str  # faster | slower | noise | unstable (the lab case relative to the baseline)
    method: str
    lab_loop_us: float | None = None  # eager-loop time per call, where the run has it
    baseline_loop_us: float | None = None
    lab_clock_note: str | None = None  # cases.csv clock_note: why it ran throttled, None if not
    baseline_clock_note: str | None = None

    @property
    def throttled(self) -> bool:
        return bool(self.lab_clock_note or self.baseline_clock_note)

    @property
    def where(self) -> str:
        return f"{self.dtype} {self.shape}"

    @property
    def delta_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def to_dict(self) -> dict:
        out = {
            "dtype": self.dtype,
            "shape": self.shape,
            "baseline": self.baseline,
            "ratio": plain(self.ratio),
            "ci_low": plain(self.ci_low),
            "ci_high": plain(self.ci_high),
            "outcome": self.outcome,
            "method": self.method,
        }
        if self.lab_loop_us is not None and self.baseline_loop_us is not None:
            out["loop_us"] = {
                "lab": plain(self.lab_loop_us),
                "baseline": plain(self.baseline_loop_us),
            }
        if self.throttled:
            out["clock_notes"] = {"lab": self.lab_clock_note, "baseline": self.baseline_clock_note}
        return out


@dataclass
class Finding:
    subject: str
    kind: FindingKind
    kernel: str
    variant: str | None = None
    case: str | None = None  # the case (NVTX range) name: the row of cases.csv/kernels.csv
    dtype: str | None = None
    shape: str | None = None
    bottleneck: Bottleneck | None = None
    unit: Unit | None = None
    verdict: Verdict | None = None  # kind VERDICT only
    reasons: list[Reason] = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    next: list[Advice] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    comparisons: list[BaselineComparison] = field(default_factory=list)
    tally: dict = field(default_factory=dict)  # verdict: {baseline: {outcome: count}}
    nvidia_rules: list[RuleResult] = field(default_factory=list)
    ruled_out: list[dict] = field(default_factory=list)  # steps withheld: {action, why}
    # catalogue causes this finding could not judge: their counters were not collected
    not_measured: list[str] = field(default_factory=list)


@dataclass
class Report:
    """Everything explain found in one run (or report): verdicts first per kernel, then findings.

    Iterating yields every finding in that order, so a caller may treat it as a list."""

    verdicts: list[Finding] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # cases, host, history, launches
    source: str = ""  # run id or report path
    mode: str = "gpu"  # gpu | interpret | report
    notes: dict[str, str] = field(default_factory=dict)  # kernel -> the manifest's caveat

    def __iter__(self) -> Iterator[Finding]:
        kernels = list(dict.fromkeys(f.kernel for f in [*self.verdicts, *self.findings]))
        for kernel in kernels:
            yield from (f for f in self.verdicts if f.kernel == kernel)
            yield from (f for f in self.findings if f.kernel == kernel)

    def __len__(self) -> int:
        return len(self.verdicts) + len(self.findings)


def plain(value: object) -> object:
    """numpy scalars to Python ones, NaN to None: evidence must survive json.dumps."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
