"""Words at the edge: each cause, step and verdict as English, from its evidence.

Templates name evidence keys in braces; every number in the text is formatted from the finding's
evidence (format_value), so each figure can be traced to a row of the stored run.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from profkit import stats
from profkit.explain.evidence import format_value
from profkit.explain.kernel_family import FUSED_OPS
from profkit.explain.model import Action, Advice, Cause, Finding, FindingKind, Reason, Verdict

_STALL_WORDS = {
    "long_scoreboard": "global memory (long scoreboard)",
    "short_scoreboard": "shared memory or special math (short scoreboard)",
    "barrier": "block barriers",
    "mio_throttle": "a full MIO queue (shared memory, special math)",
    "lg_throttle": "a full global-memory queue (LG throttle)",
    "math_pipe_throttle": "a busy math pipe",
    "wait": "fixed-latency dependencies (wait)",
    "not_selected": "not being selected",
    "membar": "memory barriers",
    "branch_resolving": "branch resolution",
    "no_instruction": "instruction fetch",
    "tex_throttle": "the texture unit",
    "drain": "memory drain at exit",
}


class _Fmt(string.Formatter):
    def __init__(self, ev: Mapping) -> None:
        self.ev = ev

    def get_value(self, key, args, kwargs):  # type: ignore[override]
        if isinstance(key, str) and key in kwargs:
            return kwargs[key]
        return format_value(str(key), self.ev.get(key))


def say(template: str, ev: Mapping, **extra: object) -> str:
    return _Fmt(ev).format(template, **extra)


def _has(ev: Mapping, *keys: str) -> bool:
    return all(ev.get(k) is not None for k in keys)


def _dram_aside(ev: Mapping) -> str:
    return (
        say(" ncu: DRAM at {dram_throughput_pct} of peak.", ev)
        if _has(ev, "dram_throughput_pct")
        else ""
    )


# --- causes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Words:
    """One way to word a cause: a template (say's fields) or, for a sentence assembled from
    optional parts, a function of the reason and the evidence. A row applies where its detail
    flag is set (when it names one) and its evidence keys are present; first match wins."""

    cause: Cause
    words: str | Callable[[Reason, Mapping], str]
    keys: tuple[str, ...] = ()
    detail: str | None = None


def _key(r: Reason) -> str:
    return r.keys[0] if r.keys else "tensor_pipe_pct"


def _opt(template: str, ev: Mapping, *keys: str) -> str:
    """A template's optional part: said where its keys are present, else nothing."""
    return template if _has(ev, *keys) else ""


def _sibling_faster(r: Reason, ev: Mapping) -> str:
    if _has(ev, "pct_of_same_size_copy_pct"):
        lead = "At {pct_of_same_size_copy_pct} of a same-size device copy it looks at the roof"
        roof = "the same-size copy is not the roof at this size"
    elif _has(ev, "pct_of_copy_pct"):
        lead = "At {pct_of_copy_pct} of the large device copy it looks at the roof"
        roof = "the copy is not the roof here"
    else:
        lead = "DRAM runs at {dram_throughput_pct} of peak, about a device copy's rate"
        roof = "a copy's rate is not the roof here"
    moved = _opt(
        " ({sibling_dram_bytes} through DRAM against this case's {dram_bytes})",
        ev,
        "sibling_dram_bytes",
        "dram_bytes",
    )
    return say(
        lead + ", but {sibling_variant} moves the same bytes in {sibling_time_share_pct} "
        "of its time" + moved + ": " + roof + ", so more than moving fewer bytes can help.",
        ev,
    )


def _throttled_verdict(r: Reason, ev: Mapping) -> str:
    text = say(
        "Clocks: {throttled_comparisons} of {comparisons} comparisons involve a throttled case",
        ev,
    )
    bits = [say("{throttle_reasons}", ev)] if _has(ev, "throttle_reasons") else []
    if _has(ev, "min_sm_clock_mhz"):
        bits.append(say("SM down to {min_sm_clock_mhz}", ev))
    if bits:
        text += " (" + "; ".join(bits) + ")"
    if ev.get("throttled_decided"):
        return text + say(
            ", deciding {throttled_decided} of its {decided_comparisons} wins and "
            "losses: those gaps may be the clock, not the code.",
            ev,
        )
    return text + ": none of its wins or losses rests on them."


def _throttled_case(r: Reason, ev: Mapping) -> str:
    clock = _opt(", SM at {sm_clock_mhz}", ev, "sm_clock_mhz")
    return say(
        "It ran throttled ({clock_note}" + clock + "): its time may reflect the clock, not "
        "the code.",
        ev,
    )


def _with_dram(template: str) -> Callable[[Reason, Mapping], str]:
    # the roof is the copy's device time; ncu's DRAM % is a different scale (a copy itself
    # reads well under 100% on it), so it is shown, not judged against
    return lambda r, ev: say(template, ev) + _dram_aside(ev)


def _cache_bound(r: Reason, ev: Mapping) -> str:
    level = r.detail.get("level", "cache")
    busy = next((k for k in r.keys if k != "dram_throughput_pct"), "memory_throughput_pct")
    return say(
        "The busy memory level is {level} ({" + busy + "} of peak) while DRAM runs "
        "at {dram_throughput_pct}: the pressure is on the caches or shared memory, "
        "not DRAM.",
        ev,
        level=level.upper() if level != "cache" else "a cache",
    )


def _extra_reads(r: Reason, ev: Mapping) -> str:
    ref = (
        "the model's {model_bytes_read}"
        if _has(ev, "model_bytes_read")
        else "the {fewest_bytes_read} the fewest-reading variant of this case reads"
    )
    return say(
        "It reads {dram_bytes_read} from DRAM, {dram_read_over_floor_x} "
        + ref
        + ": it reads its input more than once.",
        ev,
    )


def _uncoalesced_sectors(r: Reason, ev: Mapping) -> str:
    if _has(ev, "sectors_over_model_x"):
        text = say(
            "Global accesses fetch {global_sector_bytes} in 32-byte sectors, "
            "{sectors_over_model_x} the {bytes} the model moves",
            ev,
        )
        text += _opt(say(" ({sectors_per_request_ratio} per request)", ev), ev,
                     "sectors_per_request_ratio")  # fmt: skip
    else:
        text = say("Global loads fetch {sectors_per_request_ratio} sectors per request", ev)
    return text + ": neighbouring lanes do not touch neighbouring addresses (uncoalesced)."


def _tensor_busy(r: Reason, ev: Mapping) -> str:
    text = say("The Tensor Cores are busy {" + _key(r) + "} of active cycles", ev)
    text += say(_opt(", {pct_of_pipe_roof_pct} of their {pipe_roof_tflops} roof at "
                     "{roof_clock_mhz}", ev, "pct_of_pipe_roof_pct"), ev)  # fmt: skip
    text += ": the math runs near the hardware's rate"
    text += say(_opt(" (ncu's {sol_bottleneck} line is the MMAs' operand traffic)", ev,
                     "sol_bottleneck"), ev)  # fmt: skip
    if r.detail.get("sibling"):
        text += say(", yet {sibling_variant} does the same FLOPs ", ev)
        text += (
            say("in {sibling_time_share_pct} of its time", ev)
            if r.detail.get("sibling") == "faster"
            else "in the same time"
        )
    return text + "."


def _keyed(template: str) -> Callable[[Reason, Mapping], str]:
    """A template quoting the reason's first key as {key}."""
    return lambda r, ev: say(template.replace("{key}", "{" + _key(r) + "}"), ev)


def _tensor_underfed_fused(r: Reason, ev: Mapping) -> str:
    if r.detail.get("library") not in FUSED_OPS:  # a bare GEMM's: the next row
        return _tensor_underfed_library(r, ev)
    return say(
        f"A {r.detail['library']} kernel that fuses a whole op, with the Tensor Cores busy "
        "{" + _key(r) + "} of active cycles: short of their rate.",
        ev,
    )


_tensor_underfed_library = _keyed(
    "A library GEMM with the Tensor Cores busy {key} of active cycles, short of their rate: its "
    "shape leaves them idle part of the time."
)


def _small_grid_matmul(r: Reason, ev: Mapping) -> str:
    text = say("Too few tiles for a matmul: {grid_size} programs, {waves_per_sm} waves per SM", ev)
    text += say(_opt(" ({idle_sms} of {sm_count} SMs get none)", ev, "idle_sms"), ev)
    text += say(_opt(", so DRAM runs at only {dram_throughput_pct} of peak", ev,
                     "dram_throughput_pct"), ev)  # fmt: skip
    return text + "."


def _small_grid(r: Reason, ev: Mapping) -> str:
    if _has(ev, "idle_sms"):
        text = say(
            "Small grid: {grid_size} {blocks} for {sm_count} SMs, so {idle_sms} SMs get no work.",
            ev,
            blocks="block" if ev.get("grid_size") == 1 else "blocks",
        )
    else:
        lead = "{grid_size} blocks fill" if _has(ev, "grid_size") else "it fills"
        text = say(
            "Small grid: " + lead + " only {wave_fill_pct} of one wave's block slots, so the "
            "grid, not the kernel, caps occupancy.",
            ev,
        )
    if r.detail.get("short"):
        text += say(" At {ncu_duration_ms} it lasts about as long as a launch costs.", ev)
    return text


def _stall(r: Reason, ev: Mapping) -> str:
    stall = str(r.detail.get("stall", ""))
    text = say(
        "Warps stall mostly on {what}: {" + f"stall_{stall}_pct" + "} of active "
        "warps' cycles, {stall_share_pct} of all stalls.",
        ev,
        what=_STALL_WORDS.get(stall, stall),
    )
    if r.detail.get("shared_with"):
        text += say(
            " So do {sibling}'s ({sibling_stall_share_pct} of its stalls), and it is faster: "
            "this stall does not explain the gap.",
            ev,
            sibling=r.detail["shared_with"],
        )
    return text


def _host_split(r: Reason, ev: Mapping) -> str:
    return say(
        "On the GPU {variant} is {split_gpu_ratio_x} {gpu} than {split_baseline} "
        "at {split_where}; in an eager loop {loop_winner} wins, {win_us} against "
        "{lose_us} per call.",
        ev,
        **_split_words(ev, r.detail),
    )


def _host_bound(r: Reason, ev: Mapping) -> str:
    text = say("Host-bound: one call costs the CPU {host_us} against {device_us} on the GPU", ev)
    return text + say(_opt("; an eager loop sustains {loop_us} per call", ev, "loop_us"), ev) + "."


def _failed(r: Reason, ev: Mapping) -> str:
    what = "incorrect" if r.cause == Cause.INCORRECT else "not timed"
    text = say("{what} at {first_failure} ({first_failure_error}", ev, what=what)
    text += say(_opt(", rel_err {first_failure_rel_err}", ev, "first_failure_rel_err"), ev) + ")"
    if (ev.get("failed_cases") or 0) > 1:
        text += say("; {failed_cases} cases fail", ev)
    if r.detail.get("suspect") == "reference":
        text += say(
            "; the baselines fail too ({baseline_failed_cases} cases): every variant "
            "disagrees with the reference, so the reference is the suspect",
            ev,
        )
    return text[0].upper() + text[1:] + "."


def _regs(template: str, tail: str) -> Callable[[Reason, Mapping], str]:
    """A template with " at N registers per thread" where that was captured, before its tail."""
    return lambda r, ev: say(
        template
        + _opt(" at {registers_per_thread} registers per thread", ev, "registers_per_thread")
        + tail,
        ev,
    )


REASON_WORDS: tuple[Words, ...] = (
    Words(
        Cause.AT_ROOF,
        "At {pct_of_same_size_copy_pct} of a same-size device copy ({pct_of_copy_pct} of the "
        "large copy) it streams at the DRAM roof: only moving fewer bytes helps.",
        ("pct_of_same_size_copy_pct",),
    ),
    Words(
        Cause.AT_ROOF,
        "At {pct_of_copy_pct} of the large device copy it streams at the DRAM roof (this run "
        "measured no same-size copy, so it is judged against the large one): only moving fewer "
        "bytes helps.",
        ("pct_of_copy_pct",),
    ),
    Words(
        Cause.AT_ROOF,
        "DRAM runs at {dram_throughput_pct} of peak, about what a device copy reaches: only "
        "moving fewer bytes helps.",
    ),
    Words(
        Cause.AT_SIZE_ROOF,
        "At {pct_of_same_size_copy_pct} of a same-size device copy, in {ncu_duration_ms}: at "
        "this size a copy is a launch too, so the cost is the launch, not the bytes.",
        detail="launch",
    ),
    Words(
        Cause.AT_SIZE_ROOF,
        lambda r, ev: say(
            "At {pct_of_same_size_copy_pct} of a same-size device copy"
            + _opt(" ({pct_of_copy_pct} of the large copy's rate)", ev, "pct_of_copy_pct")
            + " it moves its bytes as fast as a copy of them does: the limits its counters show "
            "are a copy's too at this size, so launch-shape and latency changes will not make it "
            "faster.",
            ev,
        ),
    ),
    Words(Cause.SIBLING_FASTER, _sibling_faster),
    Words(Cause.THROTTLED, _throttled_verdict, detail="verdict"),
    Words(Cause.THROTTLED, _throttled_case),
    Words(
        Cause.SHORT_OF_ROOF,
        _with_dram(
            "It reaches {pct_of_same_size_copy_pct} of a same-size device copy, the roof it is "
            "judged against ({pct_of_copy_pct} of the large copy): short of it."
        ),
        ("pct_of_same_size_copy_pct",),
    ),
    Words(
        Cause.SHORT_OF_ROOF,
        _with_dram(
            "It reaches {pct_of_copy_pct} of the large device copy, the roof it is judged "
            "against (same-size roof unknown for this run): short of it."
        ),
        ("pct_of_copy_pct",),
    ),
    Words(
        Cause.SHORT_OF_ROOF,
        "DRAM runs at {dram_throughput_pct} of peak, short of a device copy's rate.",
    ),
    Words(Cause.CACHE_BOUND, _cache_bound),
    Words(Cause.EXTRA_READS, _extra_reads),
    Words(
        Cause.EXTRA_PASSES,
        "Its {kernel_count} kernels move {dram_bytes} through DRAM, {dram_over_model_x} the "
        "model's {bytes}: each pass crosses DRAM again.",
        ("dram_over_model_x",),
    ),
    Words(
        Cause.EXTRA_PASSES,
        "Its {kernel_count} kernels read {dram_bytes_read} from DRAM, {dram_read_over_floor_x} "
        "the fewest any variant reads.",
    ),
    Words(
        Cause.DATA_IN_L2,
        "ncu counted {dram_bytes} through DRAM, {dram_over_model_x} the model's {bytes}: the "
        "rest stayed in L2 (writes not yet flushed), so DRAM figures understate its traffic.",
    ),
    Words(
        Cause.REGISTER_SPILLS,
        _regs(
            "Registers spill",
            ": {local_bytes} of local-memory traffic, {local_share_pct} of its L1 traffic to "
            "global and local memory.",
        ),
    ),
    Words(
        Cause.ATOMIC_CONTENTION,
        "{atomic_requests} global atomic requests pile onto a few addresses: the busiest L2 "
        "slice's atomic unit is busy {l2_atomic_busy_max_pct} of the time against "
        "{l2_atomic_busy_pct} on average, so the updates serialize there.",
    ),
    Words(
        Cause.SMALL_PROGRAMS,
        "Programs too small to amortize their launch: blocks of {block_size} threads over "
        "{waves_per_sm} waves reach {achieved_occupancy_pct} achieved occupancy against "
        "{theoretical_occupancy_pct} theoretical, the most the SM's resident-block limit allows "
        "at that size ({resident_block_cap_pct}); blocks retire about as fast as they launch.",
    ),
    Words(
        Cause.ONE_BLOCK_PER_SM,
        "Memory-bound though ncu's SOL reads {sol_bottleneck}: at {flop_per_byte} against the "
        "FMA pipe's {fma_ridge_flop_per_byte} ridge its time goes to streaming memory, yet each "
        "SM holds {resident_blocks_per_sm} program of {block_size} threads at a time "
        "({theoretical_occupancy_pct} theoretical occupancy, {waves_per_sm} waves): while it "
        "waits at its barriers and reductions no other program's loads are in flight, so memory "
        "runs at only {memory_throughput_pct}.",
        ("flop_per_byte", "fma_ridge_flop_per_byte", "sol_bottleneck"),
    ),
    Words(
        Cause.ONE_BLOCK_PER_SM,
        "Each SM holds {resident_blocks_per_sm} program of {block_size} threads at a time "
        "({theoretical_occupancy_pct} theoretical occupancy) and runs them one after another "
        "over {waves_per_sm} waves: while one waits at its barriers and reductions no other "
        "program's loads are in flight, so memory runs at only {memory_throughput_pct}.",
    ),
    Words(
        Cause.SHARED_LIMITS_OCCUPANCY,
        lambda r, ev: say(
            "Shared memory per block"
            + _opt(" ({shared_mem_bytes})", ev, "shared_mem_bytes")
            + " is the tightest occupancy limiter: {occupancy_limit_shared_mem} blocks per SM, "
            "{theoretical_occupancy_pct} theoretical occupancy.",
            ev,
        ),
    ),
    Words(
        Cause.ATOMIC_ORDERING,
        "Warps wait on memory barriers ({stall_membar_pct} of active warps' cycles, "
        "{membar_stall_share_pct} of the stalls) around {atomic_requests} atomic requests: each "
        "atomic's ordering fences it.",
    ),
    Words(
        Cause.WEIGHT_CASTS,
        "Under autocast {param_casts_per_step} weight casts run every call, {cast_share_pct} "
        "of its device time: each reads a weight in fp32 twice the bytes its GEMM reads, and "
        "the same weights are cast again each time.",
        ("cast_share_pct",),
    ),
    Words(
        Cause.WEIGHT_CASTS,
        "Under autocast {param_casts_per_step} weight casts (copy_) run every step: the same "
        "weights are cast again each time.",
    ),
    Words(
        Cause.BRANCH_DIVERGENCE,
        "{divergent_share_pct} of branch targets diverge ({branch_targets_divergent}): lanes of "
        "a warp take different paths and run them one after the other.",
    ),
    Words(
        Cause.MEMORY_LATENCY,
        "Warps wait on memory ({stall_long_scoreboard_pct} long-scoreboard, {stall_share_pct} "
        "of the stalls) while memory runs at only {memory_throughput_pct} of its peak: too few "
        "loads in flight to cover the latency.",
    ),
    Words(
        Cause.L2_REUSE,
        lambda r, ev: say(
            "Its loads ask for {global_ld_bytes_requested}, {asked_over_dram_x} the "
            "{dram_bytes_read} DRAM delivers: the rest is re-read from the caches"
            + _opt(" ({l2_hit_pct} L2 hits)", ev, "l2_hit_pct")
            + ".",
            ev,
        ),
    ),
    Words(
        Cause.ISSUE_BOUND,
        "The schedulers issue on {issue_active_pct} of active cycles with no pipe at its peak: "
        "bound on instruction issue.",
    ),
    Words(
        Cause.UNCOALESCED,
        "{atomic_requests} atomic requests land at scattered addresses, each lane's update an L2 "
        "sector operation of its own: L2 runs at {l2_throughput_pct} with every slice's atomic "
        "unit busy {l2_atomic_busy_pct} alike (uncoalesced atomics, no hot address).",
        detail="atomics",
    ),
    Words(
        Cause.UNCOALESCED,
        "Global loads fetch {global_ld_sectors} sectors where the bytes they ask for need "
        "{ideal_ld_sectors} ({sectors_over_ideal_x} the ideal): lanes scatter over sectors "
        "(uncoalesced).",
        ("sectors_over_ideal_x",),
    ),
    Words(Cause.UNCOALESCED, _uncoalesced_sectors),
    Words(
        Cause.BANK_CONFLICTS,
        "{bank_conflict_share_pct} of shared-memory wavefronts are bank conflicts "
        "({shared_bank_conflicts} of {shared_wavefronts}), but the stalls on shared memory "
        "(short scoreboard, MIO throttle) hold only {shared_stall_share_pct} of the stalls: not "
        "where the time goes.",
        detail="minor",
    ),
    Words(
        Cause.BANK_CONFLICTS,
        "{bank_conflict_share_pct} of shared-memory wavefronts are bank conflicts "
        "({shared_bank_conflicts} of {shared_wavefronts}): accesses replay.",
    ),
    Words(Cause.TENSOR_BUSY, _tensor_busy),
    Words(
        Cause.FP32_GEMM_ON_FMA,
        _keyed(
            "An fp32 GEMM with the Tensor Cores busy only {key}: without TF32 its math runs "
            "on the FMA pipe."
        ),
    ),
    Words(
        Cause.MATMUL_OFF_TENSOR,
        _keyed(
            "A matrix product with the Tensor Cores busy only {key}: its math runs on the FMA pipe."
        ),
    ),
    Words(Cause.TENSOR_UNDERFED, _tensor_underfed_fused, detail="library"),
    Words(
        Cause.TENSOR_UNDERFED,
        _keyed(
            "A matmul whose Tensor Cores are busy only {key} of active cycles: its tiles "
            "keep them under-fed."
        ),
        detail="busy",
    ),
    Words(
        Cause.TENSOR_UNDERFED,
        "A matmul on the Tensor Cores at only {pct_of_pipe_roof_pct} of their "
        "{pipe_roof_tflops} roof at {roof_clock_mhz}: its tiles keep them under-fed.",
        ("pct_of_pipe_roof_pct",),
    ),
    Words(
        Cause.TENSOR_UNDERFED,
        _keyed(
            "A matmul whose Tensor Cores are busy only {key} of active cycles: its tiles "
            "keep them under-fed."
        ),
    ),
    Words(
        Cause.PIPE_BUSY,
        lambda r, ev: say(
            "The {pipe} pipe is busy {" + r.keys[0] + "}: compute-bound on it.",
            ev,
            pipe=str(r.detail.get("pipe", "")).upper(),
        ),
    ),
    Words(
        Cause.SMALL_GRID,
        "{grid_size} programs leave SMs idle ({waves_per_sm} waves per SM), but "
        "{sibling_variant} runs {sibling_grid_size} and takes {sibling_time_share_pct} of its "
        "time: the grid is not what limits it.",
        detail="refuted",
    ),
    Words(Cause.SMALL_GRID, _small_grid_matmul, detail="matmul"),
    Words(Cause.SMALL_GRID, _small_grid),
    Words(
        Cause.TAIL,
        "Tail: {waves_per_sm} waves leave {tail_idle_pct} of the launch's block slots idle in "
        "the last wave.",
    ),
    Words(
        Cause.LOW_OCCUPANCY,
        "Achieved occupancy {achieved_occupancy_pct} against {theoretical_occupancy_pct} "
        "theoretical: most warps the launch allows are missing (imbalance or a tail).",
    ),
    Words(
        Cause.LOW_THEORETICAL_OCCUPANCY,
        _regs("The launch allows only {theoretical_occupancy_pct} theoretical occupancy", "."),
    ),
    Words(
        Cause.LAUNCH_OVERHEAD,
        "Launch overhead: {kernel_count} kernels averaging {mean_kernel_ms} each, about what a "
        "launch costs.",
    ),
    Words(
        Cause.SHORT_KERNEL, "At {ncu_duration_ms} the kernel lasts about as long as a launch costs."
    ),
    Words(Cause.STALL, _stall),
    Words(
        Cause.NO_CAUSE_SEEN,
        "Neither the launch shape nor occupancy explains the gap (theoretical occupancy "
        "{theoretical_occupancy_pct}).",
        ("theoretical_occupancy_pct",),
        detail="short_of_roof",
    ),
    Words(Cause.NO_CAUSE_SEEN, lambda r, ev: "", detail="section"),
    Words(
        Cause.NO_CAUSE_SEEN, "No launch-shape, occupancy or traffic cause shows in these counters."
    ),
    Words(Cause.HOST_BOUND, _host_split, detail="split"),
    Words(Cause.HOST_BOUND, _host_bound),
    Words(
        Cause.NO_COUNTERS,
        "Timing only ({counters_reason}): without counters no bottleneck is claimed.",
    ),
    Words(Cause.INCORRECT, _failed),
    Words(Cause.UNTIMED, _failed),
    Words(Cause.TIME_IN_LAUNCHES, lambda r, ev: _time_in_launches(r.detail, ev)),
    *(
        Words(c, lambda r, ev: _step_words(r.cause, ev))
        for c in (Cause.ITERATION_LATENCY, Cause.TAIL_STAGE, Cause.PADDING)
    ),  # fmt: skip
)
_WORDS_BY_CAUSE: dict[Cause, list[Words]] = {}
for _w in REASON_WORDS:
    _WORDS_BY_CAUSE.setdefault(_w.cause, []).append(_w)


def reason_text(r: Reason, ev: Mapping) -> str:
    """The first row of REASON_WORDS for the cause whose detail flag and evidence keys hold."""
    for w in _WORDS_BY_CAUSE.get(r.cause, ()):
        if (w.detail is None or r.detail.get(w.detail)) and _has(ev, *w.keys):
            return say(w.words, ev) if isinstance(w.words, str) else w.words(r, ev)
    return ""


# what step latency measures: the finding says so, since it is not one call's device time
STEP_LATENCY_WORDS = (
    "step latency (events around each step, so it includes the GPU's wait for the host's "
    "launches; not one call's device time)"
)


def _step_words(c: Cause, ev: Mapping) -> str:
    if c == Cause.ITERATION_LATENCY:
        text = say(
            "Widest tail at {worst_where}: p50 {step_p50_ms}, p95 {step_p95_ms}, "
            "p99 {step_p99_ms}, p95/p50 {p95_over_p50_ratio}",
            ev,
        )
        if _has(ev, "inherent_mix_p95_over_p50_ratio"):
            text += say(
                " (inherent mix {inherent_mix_p95_over_p50_ratio}: the p95/p50 if every step "
                "took its bucket's median, the work's own variation without jitter)",
                ev,
            )
        if ev.get("step_cases", 0) > 1:
            text += say(
                " (p95/p50 from {p95_over_p50_min_ratio} to {p95_over_p50_max_ratio} over "
                "{step_cases} cases)",
                ev,
            )
        return text + "."
    if c == Cause.TAIL_STAGE:
        text = say(
            "Where the tail comes from (probes, at {tail_where}): over the steps beyond p95, "
            "{tail_stage} runs {tail_stage_excess_us} above its median",
            ev,
        )
        if _has(ev, "tail_excess_us"):
            text += say("; those steps exceed the median step by {tail_excess_us} in all", ev)
        if _has(ev, "probe_note"):
            text += say(" ({probe_note})", ev)
        if ev.get("probed_cases", 0) > 1:
            text += say(
                "; {commonest_tail_stage} leads at {commonest_tail_cases} of {probed_cases} "
                "probed cases",
                ev,
            )
        return text + "."
    text = say(
        "Padding to the batch buckets wastes {pad_waste_pct} of the rows on average; within a "
        "bucket p95/p50 is {within_bucket_p95_over_p50_ratio}",
        ev,
    )
    if _has(ev, "tail_bucket"):
        text += say(
            ", and bucket {tail_bucket} holds {tail_bucket_tail_pct} of the tail steps "
            "({tail_bucket_steps_pct} of all steps)",
            ev,
        )
        within = ev.get("within_bucket_p95_over_p50_ratio")
        if within is not None and within < (ev.get("p95_over_p50_ratio") or 0):
            text += (
                ": the tail comes from the batch moving between buckets more than from "
                "jitter within one"
            )
        if _has(ev, "tail_bucket_p50_over_run_ratio"):
            text += say(
                ". Bucket {tail_bucket}'s own p50 ({tail_bucket_p50_ms}) is "
                "{tail_bucket_p50_over_run_ratio} times the run's",
                ev,
            )
            if _has(ev, "bucket_p95_over_p50_max_ratio"):
                text += say(
                    "; each bucket's own p95/p50 is {bucket_p95_over_p50_min_ratio} to "
                    "{bucket_p95_over_p50_max_ratio}",
                    ev,
                )
            if (ev.get("tail_bucket_p50_over_run_ratio") or 0) > 1 and _has(ev, "tail_stage"):
                text += (
                    ", so the probes' tail stage, read against the run's median step, "
                    "largely measures the larger bucket's extra work"
                )
    if _has(ev, "split_bucket", "split_stage1"):
        text += say(
            ". Within bucket {split_bucket}, its {split_tail_steps} tail steps (of "
            "{split_all_tail_steps} in the probed run) exceed the bucket's own stage medians by "
            "{split_stage1} {split_stage1_us}",
            ev,
        )
        if _has(ev, "split_stage2"):
            text += say(", {split_stage2} {split_stage2_us}", ev)
    return text + "."


def _split_words(ev: Mapping, d: Mapping) -> dict:
    faster = ev.get("split_gpu_outcome") == "faster"
    lab_us, base_us = ev.get("split_lab_loop_us"), ev.get("split_baseline_loop_us")
    variant = d.get("variant", "it")
    return {
        "variant": variant,
        "gpu": "faster" if faster else "slower",
        "loop_winner": ev.get("split_baseline") if faster else variant,
        "win_us": format_value("_us", base_us if faster else lab_us),
        "lose_us": format_value("_us", lab_us if faster else base_us),
    }


def _time_in_launches(d: Mapping, ev: Mapping) -> str:
    parts = []
    for g in d.get("groups", []):
        text = (
            f"{format_value('_pct', g['share_pct'])} in {g['launches']} "
            f"{g['bottleneck']}-bound launch{'es' if g['launches'] != 1 else ''}"
        )
        if g["bottleneck"] == "memory" and g.get("dram_min_pct") is not None:
            lo, hi = g["dram_min_pct"], g["dram_max_pct"]
            span = f"{lo:.0f}%" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}%"
            text += f" at {span} DRAM"
        parts.append(text)
    if not parts:
        return ""
    lead = say("Its {launches} launches split the time: ", ev)
    return lead + "; ".join(parts) + "."


# --- steps ----------------------------------------------------------------------------------------

ADVICE_TEXT: dict[Action, str] = {
    Action.WEIGHT_CASTS: "these casts recur every step (under autocast, one per fp32 weight per "
    "forward): keep a bf16 copy of the weights, refreshed once per optimizer step (or hold the "
    "model in bf16 with fp32 master weights in the optimizer), or let torch.compile fold the "
    "casts into the ops that read them",
    Action.FOLD_CASTS: "casts up to float32 recur every step under autocast: each fp32 weight's "
    "gradient is cast back from bf16 (one per weight), and ops on autocast's fp32 list "
    "(cross-entropy, a norm's statistics) cast their inputs up; bf16 weights with fp32 master "
    "weights in the optimizer remove the first, a kernel that reads bf16 and computes in fp32 (a "
    "fused norm, a fused linear + cross-entropy, or torch.compile) the second",
    Action.ALIGN_GEMM: "its operands are not 16-byte aligned, so cuBLAS runs CUTLASS's "
    "alignment-1 fallback far from the Tensor Cores' rate: pad the dimension that is not a "
    "multiple of 8 elements to a multiple of 64 (in a language model's output head, the "
    "vocabulary: 50,257 to 50,304, as nanoGPT does), and the GEMM gets cuBLAS's aligned kernels",
    Action.BIAS_GRADS: "backward's sums over the batch are broadcasts' gradients, in a "
    "transformer mostly the Linear layers' bias gradients, each its own small reduction: fold "
    "them into the weight-gradient GEMM (cuBLASLt's bias-gradient epilogue, as TransformerEngine's "
    "Linear does), let torch.compile fuse them with their neighbours, or drop the biases (nanoGPT "
    "trains GPT-2 with bias=False, which it finds a bit better and faster)",
    Action.OPTIMIZER_STATE: "the optimizer is fused already (one multi-tensor kernel streams "
    "parameters, gradients and both moments once per step): gains come from precision (bf16 "
    "parameters or moments, 8-bit optimizer state), a lower-traffic optimizer state (factored "
    "second moments, as Adafactor's) or fewer optimizer steps (gradient accumulation), not from "
    "fusing it",
    Action.FUSED_OPTIMIZER: "the optimizer is multi-tensor (foreach) already, but each of its "
    "ops passes over every parameter: fused=True does the whole step in one pass; beyond that, "
    "precision (bf16 or 8-bit optimizer state) or a lower-traffic optimizer state",
    Action.FUSED_LINEAR_CE: "use a fused linear + cross-entropy that never materializes the "
    "batch x vocabulary logits (Liger-Kernel's LigerFusedLinearCrossEntropyLoss computes the "
    "output projection and the loss chunk by chunk, the logits' gradient in place): the logits, "
    "their log-probabilities and their gradient stop crossing DRAM",
    Action.NORM_NEIGHBOURS: "it is one kernel per norm already: fewer bytes come only from fusing "
    "it with its neighbours (the residual add before it, the cast after it: torch.compile, or a "
    "fused add + norm kernel such as Liger-Kernel's)",
    Action.ACTIVATION_EPILOGUE: "fold the activation into the matmul that produces its input (a "
    "GEMM epilogue: torch.compile with max-autotune's Triton templates, or cuBLASLt's GELU "
    "epilogue), so its input and output never cross DRAM on their own; its backward likewise",
    Action.FEWER_BYTES: "move fewer bytes: fuse it with the ops around it or keep data on chip; "
    "launch tuning will not help",
    Action.FUSE: "fuse the kernels into one (torch.compile or a fused kernel) so the data "
    "crosses DRAM once",
    Action.REMOVE_EXTRA_READS: "read the input once: keep it on chip between the passes that "
    "use it",
    Action.BYTES_IN_FLIGHT: "keep more bytes in flight per thread: issue independent loads early "
    "and unroll, so each warp has several loads outstanding",
    Action.WIDER_LOADS: "issue fewer, wider global memory instructions (128-bit vector loads)",
    Action.RAISE_OCCUPANCY: "cut registers or shared memory per block (smaller tiles, fewer "
    "stages, other num_warps) to fit more warps per SM",
    Action.BALANCE_WORK: "balance the work across programs and warps; ncu's Occupancy and "
    "SchedulerStats sections show where warps go missing",
    Action.MORE_PROGRAMS: "launch more, smaller programs (split rows or the reduction across "
    "programs) so every SM gets work",
    Action.WHOLE_WAVES: "size the grid (or the work per program) so the waves come out whole",
    Action.CUDA_GRAPH: "cut the host cost per call: capture the calls in a CUDA graph, launch "
    'fewer kernels, or torch.compile(mode="reduce-overhead")',
    Action.COALESCE: "make neighbouring lanes read neighbouring addresses (change the layout, or "
    "stage through shared memory) so each 32-byte sector is used whole",
    Action.PAD_SHARED: "pad or swizzle the shared-memory layout so a warp's accesses fall in "
    "different banks",
    Action.USE_TF32: "let the Tensor Cores do it: torch.backends.cuda.matmul.allow_tf32 = True or "
    'torch.set_float32_matmul_precision("high") (TF32), or bf16 inputs',
    Action.USE_TENSOR_CORES: "express the product as tl.dot on tiles so it runs on the Tensor "
    "Cores",
    Action.FEED_TENSOR: "feed the Tensor Cores: larger tiles (BLOCK_M/BLOCK_N 128 or more, "
    "BLOCK_K 64), more pipeline stages, enough warps per tile",
    Action.LESS_MATH: "do less math (lower precision, skip redundant work); launch tuning will "
    "not help",
    Action.LIBRARY_SHAPES: "it is library code, its tiles not yours to change: gains come from "
    "precision (bf16, fp8), shapes (multiples of the tile, batching small GEMMs) or fusing the "
    "epilogue",
    Action.COMPILER_OPTIONS: "it is Triton code torch.compile generated, not yours to edit: "
    'change what it is given (shapes, dtypes, layouts) or its options (mode="max-autotune" '
    "searches launch configurations), or write this kernel by hand; the source lines map to "
    "Inductor's generated file",
    Action.LIBRARY_OPTIONS: "it is Liger-Kernel code, whose launch settings Liger fixes: "
    "change the call instead (its options, e.g. casting_mode; a fused Liger op in place of a "
    "chain, e.g. LigerFusedAddRMSNormFunction), or use a kernel tuned for this shape",
    Action.CUT_INSTRUCTIONS: "cut instructions on the busy pipe (fewer conversions and index "
    "math; exp2 with a folded scale instead of exp)",
    Action.HIDE_LATENCY: "hide memory latency: issue loads earlier and keep several independent "
    "loads in flight per thread (software pipelining, more stages)",
    Action.FEWER_BARRIERS: "wait less at barriers: reduce within warps first, or split the work "
    "so fewer warps wait on one another",
    Action.DEEPER_PIPELINE: "keep more K tiles in flight: more pipeline stages (num_stages, "
    "shared memory permitting) so the Tensor Cores never wait on the next tile's loads",
    Action.SHARED_PRESSURE: "ease the MIO queue: fewer, wider shared-memory accesses and fewer "
    "special-function ops",
    Action.ILP: "more independent instructions per thread (unroll, interleave independent work)",
    Action.PROFILE_STALLS: "capture the warp stall reasons (profkit's metric set holds them from "
    "this version on; or ncu --section WarpStateStats) to see what the warps wait on",
    Action.CAPTURE_COUNTERS: "capture counters to see what limits it",
    Action.FIX_CORRECTNESS: "fix correctness first",
    Action.OPEN_NCU: "open {section} in Nsight Compute",
    Action.CUT_SPILLS: "stop the spills: fewer values live per thread (more warps per row, a "
    "smaller block, or split the row), so registers hold them instead of local memory",
    Action.PRIVATIZE_ATOMICS: "privatize the atomics: accumulate per program (registers or shared "
    "memory) and merge once per program, so few updates reach the same L2 address",
    Action.UNIFORM_BRANCHES: "make branches warp-uniform: sort or bucket the work so a warp's "
    "lanes take the same path, or compute both sides branch-free",
    Action.INDEX_LOCALITY: "give the gather locality: sort or bucket the indices, or gather wider "
    "rows per index, so a warp's reads share sectors",
    Action.LARGER_PROGRAMS: "give each program more work (more elements per program, several "
    "warps per block, or a persistent loop over the work), so each block's launch is amortized "
    "and more warps fit under the SM's resident-block limit",
    Action.LESS_SHARED: "use less shared memory per block (fewer pipeline stages, smaller tiles) "
    "so more blocks fit per SM",
    Action.RELAX_ATOMICS: "use relaxed atomics where no ordering is needed (Triton: "
    'sem="relaxed"; its default acq_rel fences each atomic)',
    Action.CAST_WEIGHTS_ONCE: "cast the weights once, not every step: keep a low-precision copy "
    "of the parameters (or store them in that dtype) instead of autocast's per-step copy_",
    Action.CHEAPER_MATH: "do cheaper math per element: lower precision where accuracy allows, "
    "fewer operations by algebra, or fast-math intrinsics",
}


def _lib(d: Mapping) -> str:
    return str(d["library"]).replace("_", " ")


def _work(d: Mapping) -> str:
    """What a faster sibling does the same of: its FLOPs or its bytes."""
    return "does the same FLOPs" if d.get("same") == "flops" else "moves the same bytes"


def _use_sibling(d: Mapping) -> str:
    # a faster sibling of code the user does not write: another backend (filters.fit_advice)
    work = _work(d)
    return (
        f"it is {_lib(d)} code, not the user's to change: use {d['sibling']} for this op "
        f"instead (another backend), which {work} in "
        f"{format_value('_pct', d.get('time_share_pct'))} of the time"
    )


def _more_programs_matmul(d: Mapping) -> str:
    cited = ", ".join(
        f"{label} {format_value(key, d[key])}"
        for key, label in (
            ("grid_size", "grid"),
            ("waves_per_sm", "waves per SM"),
            ("dram_throughput_pct", "DRAM"),
        )  # fmt: skip
        if d.get(key) is not None
    )
    return (
        "launch more programs, not larger tiles: smaller tiles along N or K, split-K or "
        f"stream-K, so every SM holds work ({cited})"
    )


@dataclass(frozen=True)
class StepWords:
    """A step's words where its detail holds `when` (keys that must be set, or a test of the
    detail): text, or a function of the detail. First row for the action that holds wins; else
    ADVICE_TEXT[action]. The detail carries the decisions (owner, kind, cause's flags); this
    only words them."""

    action: Action
    words: str | Callable[[Mapping], str]
    when: tuple[str, ...] | Callable[[Mapping], bool] = ()

    def holds(self, d: Mapping) -> bool:
        return self.when(d) if callable(self.when) else all(d.get(k) for k in self.when)


STEP_WORDS: tuple[StepWords, ...] = (
    StepWords(
        Action.FUSE,
        lambda d: (
            f"it is {_lib(d)} library code: fuse it away (torch.compile or a fused "
            "kernel) rather than tune it"
        ),
        ("library",),
    ),
    # one large program per SM (catalogue's one_block_per_sm), by owner
    StepWords(
        Action.LIBRARY_OPTIONS,
        lambda d: (
            f"it is {_lib(d)} library code, whose launch shape (one large program per SM) "
            "the library fixes: change the call (its options, another formulation of the op) "
            "or use another backend for the op that runs several smaller programs per SM"
        ),
        ("one_block", "library"),
    ),
    StepWords(
        Action.COMPILER_OPTIONS,
        # Inductor fixed the reduction's num_warps; its coordinate-descent tuner searches it
        "it is Triton code torch.compile generated, one large program per SM: let Inductor "
        "search num_warps and the block sizes (torch._inductor.config."
        "coordinate_descent_tuning = True), or give it another formulation of the op; the "
        "source lines map to Inductor's generated file",
        ("one_block",),
    ),
    StepWords(
        Action.MORE_PROGRAMS,
        "run several programs per SM: fewer warps per program (num_warps 4-8 rather than "
        "32), or each row split over several programs (a split reduction), so one "
        "program's loads are in flight while another waits at its barriers",
        ("one_block",),
    ),
    StepWords(
        Action.LIBRARY_SHAPES,
        lambda d: (
            f"it is {_lib(d)} library code, a whole op fused already: gains come from "
            "what it is given (precision; layouts and sizes it favours, e.g. channels-last, "
            "head or channel dims in multiples of 64) or from another backend for the op (for "
            "attention, SDPA's flash or memory-efficient kernels), not from fusing it"
        ),
        lambda d: d.get("library") in FUSED_OPS or bool(d.get("whole_op")),
    ),
    StepWords(
        Action.PRIVATIZE_ATOMICS,
        # library atomics (ATen's scatter_add_, index_add_): the call's formulation, not its code
        "reduce before the atomics: combine updates to the same address first (sort or "
        "bucket the indices and reduce each run, e.g. a segment reduction, or bincount-style "
        "per-block counts merged once), so few updates reach one L2 address; fusing keeps "
        "the atomics",
        ("library",),
    ),
    StepWords(
        Action.INDEX_LOCALITY,
        "give the scatter locality: sort or bucket the indices (combining duplicates before "
        "the atomics), so a warp's updates share L2 sectors",
        ("atomics",),
    ),
    StepWords(Action.LIBRARY_OPTIONS, _use_sibling, ("use_sibling",)),
    StepWords(
        Action.LIBRARY_OPTIONS,
        # a chain of library launches only (catalogue.CONFLICTS' library_chain)
        "its launches are all library code (a fused library op is the fused form already), "
        "so there is nothing of the user's to fuse: gains come from the op's options (chunk "
        "sizes, precision), another formulation of it, or another backend for it",
        ("library_chain",),
    ),
    StepWords(
        Action.LIBRARY_OPTIONS,
        # a library sort or scan (catalogue.CONFLICTS): a whole pass, another formulation
        lambda d: (
            f"it is {_lib(d)} library code that fusing does not remove (a sort or a scan "
            "is a whole pass): ask for less of it (top-k or a partial sort instead of a full sort, "
            "a segmented op, narrower keys, keys only) or use another backend for the op"
        ),
        lambda d: d.get("instead_of") == "fuse",
    ),
    StepWords(
        Action.LIBRARY_OPTIONS,
        lambda d: (
            f"it is {_lib(d)} library code, attention fused already: gains come from "
            "another backend for the op (SDPA's flash, cuDNN or memory-efficient kernels; "
            "FlashAttention-3 on Hopper) or its options (causal masks, head dims in multiples of "
            "64, precision), not from its tiles"
        ),
        lambda d: d.get("whole_op") == "attention",
    ),
    StepWords(
        Action.LIBRARY_SHAPES,  # its Tensor Cores busy
        "it is library code near its roof: gains come from precision (bf16, fp8), shapes "
        "(multiples of the tile, batching small GEMMs) or fusing the epilogue",
        ("near_roof",),
    ),
    StepWords(
        Action.CUT_INSTRUCTIONS,
        lambda d: (
            f"cut instructions on the {str(d['pipe']).upper()} pipe (fewer conversions "
            "and index math; exp2 with a folded scale instead of exp)"
        ),
        ("pipe",),
    ),
    StepWords(Action.MORE_PROGRAMS, _more_programs_matmul, ("matmul",)),
    StepWords(Action.MATCH_SIBLING, lambda d: _sibling_step(d)),
    StepWords(
        Action.CUDA_GRAPH,
        # device time is measured by graph replay: a graph or less host work cannot reach it
        "the loss is in device time, which host-side fixes (CUDA graphs) do not reach: do "
        "more work per launch, or fuse the kernel with its neighbours, so the launch's fixed "
        "cost on the GPU is paid once",
        ("device_loss",),
    ),
    StepWords(
        Action.FIX_CORRECTNESS,
        "check the reference (and make_inputs) first: the baselines disagree with it too, "
        "so the reference is the suspect",
        lambda d: d.get("suspect") == "reference",
    ),
    StepWords(
        Action.OPEN_NCU,
        lambda d: f"open {d.get('section', 'the details page')} in Nsight Compute",
    ),
    StepWords(
        Action.FEWER_BYTES,
        "nothing left to tune at this size: the gap to the roof is under the practical "
        "floor, so only fewer bytes (fusing with its neighbours) or fewer launches help",
        ("under_floor",),
    ),
)
_STEP_WORDS_BY_ACTION: dict[Action, list[StepWords]] = {}
for _s in STEP_WORDS:
    _STEP_WORDS_BY_ACTION.setdefault(_s.action, []).append(_s)


def advice_text(step: Advice) -> str:
    d = step.detail
    row = next((w for w in _STEP_WORDS_BY_ACTION.get(step.action, ()) if w.holds(d)), None)
    if row is None:
        text = ADVICE_TEXT[step.action]
    else:
        text = row.words if isinstance(row.words, str) else row.words(d)
    if d.get("gain_us") is not None:
        text += f" (up to {format_value('_us', d['gain_us'])} to gain)"
    if d.get("launch"):  # one launch of several: the step is for it
        text = f"for {d['launch']}: {text}"
    closest = d.get("closest")
    if d.get("where") and closest == "faster":
        gap = format_value("_x", d["closest_x"]) if d.get("closest_x") else "measurably"
        against = d.get("against")
        text = f"at {d['where']}, its closest case (still {gap} faster than {against}): {text}"
    elif d.get("where") and closest == "unstable":
        text = (
            f"at {d['where']}, its closest case (unstable against {d.get('against')}: its "
            f"interval spans both sides of the floor): {text}"
        )
    elif d.get("where") and closest:
        text = (
            f"at {d['where']}, its closest case (tied with {d.get('against')}: no device-time "
            f"gap past the practical floor): {text}"
        )
    elif d.get("where"):
        text = f"at {d['where']} (against {d.get('against')}): {text}"
    return text


def _sibling_step(d: Mapping) -> str:
    sibling, share = d.get("sibling"), d.get("time_share_pct")
    work = _work(d)
    if d.get("outcome") == "noise":
        text = f"{sibling} {work} in the same time: see what it does differently"
    else:
        text = (
            f"see what {sibling} does differently: it {work} in "
            f"{format_value('_pct', share)} of the time"
        )
    differs = [
        f"{_FACT_WORDS.get(x['key'], x['key'])} {format_value(x['key'], x['sibling'])} "
        f"against {format_value(x['key'], x['this'])}"
        for x in d.get("differs") or []
    ]
    if differs:
        text += " (its " + ", ".join(differs) + ")"
    elif d.get("compared"):
        # nothing in the collected launch facts or traffic differs: say so, and where to look
        text += (
            f" (none of its {', '.join(_FACT_WORDS.get(k, k) for k in d['compared'])} differs in "
            "a way that could make it faster: the difference is in the code, not in these "
            "counters; compare the two kernels' SASS, e.g. load and store cache hints and "
            "instruction order)"
        )
    return text


_FACT_WORDS = {
    "achieved_occupancy_pct": "achieved occupancy",
    "theoretical_occupancy_pct": "theoretical occupancy",
    "registers_per_thread": "registers per thread",
    "block_size": "block size",
    "grid_size": "grid",
    "dram_bytes": "DRAM bytes",
    "global_ld_bytes_requested": "load bytes requested",
}


# --- whole findings -------------------------------------------------------------------------------


def finding_text(f: Finding) -> str:
    if f.kind == FindingKind.VERDICT:
        return verdict_text(f)
    ev = f.evidence
    parts = []
    if f.kind == FindingKind.CASE and _has(ev, "device_p50_ms"):
        lead = say("p50 {device_p50_ms}", ev)
        if _has(ev, "achieved_tflops") and str(ev.get("roof_pipe", "")).startswith("tensor"):
            lead += say(", {achieved_tflops}", ev)
        parts.append(lead + ".")
    if f.kind == FindingKind.LAUNCH and _has(ev, "ncu_duration_ms"):
        parts.append(say("ncu measured {ncu_duration_ms}.", ev))
    if f.kind == FindingKind.HISTORY:
        return history_text(f)
    if _has(ev, "memory_queue_stall_share_pct", "sol_bottleneck"):
        # why memory-bound where ncu's SOL line says otherwise
        parts.append(say(
            "Memory-bound though ncu's SOL reads {sol_bottleneck}: {memory_queue_stall_share_pct} "
            "of the stalls wait on full memory queues, {queue_level} at {queue_level_pct}.",
            ev,
        ))  # fmt: skip
    if f.kind == FindingKind.ITERATIONS:
        parts.append(f"{STEP_LATENCY_WORDS[0].upper()}{STEP_LATENCY_WORDS[1:]}.")
    parts += [reason_text(r, ev) for r in f.reasons]
    return " ".join(p for p in parts if p)


def first_advice_text(f: Finding) -> str | None:
    """The words of a finding's first next step, None when it has none."""
    return advice_text(f.next[0]) if f.next else None


def history_text(f: Finding) -> str:
    ev = f.evidence
    text = say(
        "Against {previous_run} ({cases_compared} cases): median time ratio "
        "{median_time_ratio_x}; faster at {cases_faster}, slower at {cases_slower}, no "
        "change at {cases_noise}",
        ev,
    )
    changes = [
        (k, label)
        for k, label in (
            ("median_change_registers_per_thread", "registers"),
            ("median_change_achieved_occupancy_pct", "achieved occupancy"),
            ("median_change_dram_throughput_pct", "DRAM throughput"),
        )
        if _has(ev, k)
    ]
    if changes:
        text += "; median change: " + ", ".join(
            f"{label} {_signed(k, ev[k])}" for k, label in changes
        )
    text += "."
    if _has(ev, "tried_where"):
        text += say(
            " Occupancy went {occupancy_before_pct} -> {occupancy_after_pct} at "
            "{tried_where} with no time change ({time_outcome}): raising occupancy is "
            "not advised again.",
            ev,
        )
    return text


def _ran_throttled(ev: Mapping, key: str) -> str:
    """The caveat on a win or loss: who ran throttled (the reasons are in the Clocks sentence)."""
    who = ev.get(key)
    if not who:
        return ""
    return f" ({' and '.join(who)} ran throttled)"


def _signed(key: str, value: float) -> str:
    sign = "+" if value >= 0 else "-"
    unit_key = "points_pct" if key.endswith("_pct") else key
    text = format_value(unit_key, abs(value))
    return sign + (text.replace("%", " pt") if key.endswith("_pct") else text)


def verdict_text(f: Finding) -> str:
    ev = f.evidence
    v = f.variant or f.kernel
    if f.verdict == Verdict.CORRECTNESS_ONLY:
        text = say("Correctness run: {correct_cases}/{lab_cases} correct, no timing.", ev)
        extra = " ".join(reason_text(r, ev) for r in f.reasons)
        return f"{text} {extra}".strip()
    if f.reasons and f.reasons[0].cause in (Cause.INCORRECT, Cause.UNTIMED):
        return f"{v} is not a win: an incorrect variant never counts as fast. " + reason_text(
            f.reasons[0], ev
        )
    if f.verdict == Verdict.NO_BASELINE:
        return f"{v} has no baseline timed at the same dtype and shape, so there is no verdict."
    head = {
        Verdict.WIN: "is a win",
        Verdict.ACTIVE_TRACK: "is an active track",
        Verdict.NOT_A_WIN: "is not a win",
    }[f.verdict]
    measure = ev.get("measure", "device time")
    text = say(f"{v} {head} on {measure}: correct at all {{lab_cases}} cases", ev)
    clauses = []
    for baseline, t in f.tally.items():
        n = sum(t.values())
        bits = [f"faster at {t['faster']}"] if t["faster"] else []
        bits += [f"ties at {t['noise']}"] if t["noise"] else []
        bits += [f"slower at {t['slower']}"] if t["slower"] else []
        bits += [f"unstable at {t['unstable']}"] if t["unstable"] else []
        clauses.append(f"against {baseline} {', '.join(bits)} of {n}")
    text += "; " + "; ".join(clauses) + "."
    sides = [
        say(
            f"{{ties_{side}_cases}} {side} (up to {{ties_{side}_max_pct}}, against "
            f"{{ties_{side}_baseline}} at {{ties_{side}_where}})",
            ev,
        )
        for side in ("slower", "faster")
        if _has(ev, f"ties_{side}_cases")
    ]
    if sides:
        # a real gap (its interval clears 1) that is too small to count is still a tie: said as
        # such, never as "measurably slower" beside "under the floor"
        text += (
            f" Of the ties, {' and '.join(sides)} by real but negligible gaps: their 95% "
            "intervals clear 1, but no gap reaches the practical floor "
            f"({stats.PRACTICAL_FLOOR_PCT:g}% and {stats.PRACTICAL_FLOOR_US:g} us), so each "
            "counts as a tie."
        )
    if _has(ev, "worst_loss_pct"):
        text += say(
            " Worst loss: {worst_loss_pct} slower than {worst_loss_baseline} at {worst_loss_where}",
            ev,
        )
        text += _ran_throttled(ev, "worst_loss_throttled") + "."
    if _has(ev, "best_win_x"):
        text += say(
            " Largest win: {best_win_x} faster than {best_win_baseline} at {best_win_where}", ev
        )
        text += _ran_throttled(ev, "best_win_throttled") + "."
    for r in f.reasons:
        text += " " + reason_text(r, ev)
    if _has(ev, "not_compared"):
        text += say(" No baseline was timed at {not_compared}, so it is not judged there.", ev)
    if ev.get("timing_method") == "schema-1 events":
        text += (
            " (A schema-1 run: timed by events around each call, a window that holds the host's "
            "cost at decode shapes; recapture for device time.)"
        )
    return text
