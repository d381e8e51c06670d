"""The curated Nsight Compute metric set: one table, the single source of names and meanings.

Every counter column in profkit's tables comes from a row here. The ncu names marked verified
were seen with values on the project's H200 (Nsight Compute 2025.3.1, sm_90): in
../shared/notes/gpu-facts.md, or in the committed reports (tests/fixtures/*.ncu-rep.xz and the runs'
counters.ncu-rep.xz, which hold the sections' metrics too). `verified=False` rows come from NVIDIA's
documentation (the Nsight Compute profiling guide and nvprof transition table) and await an H200
capture; ncu prints an unknown name as n/a, and the run lists it under counters.metrics_na.
`agg` says how a case that launches several kernels folds its kernel rows into one:
  sum   - additive quantities (time, bytes);
  wmean - percentages and rates, weighted by each kernel's duration (a 2 us kernel at 10% must not
          outvote a 50 us kernel at 90%);
  max   - launch-shape figures, where the largest launch is the one worth reading.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    column: str  # profkit's column name
    ncu: str  # Nsight Compute metric name
    unit: str
    agg: str  # sum | wmean | max
    meaning: str
    scale: float = 1.0  # ncu value * scale = column value
    # False: the name comes from NVIDIA's documentation but has not yet been seen with a value on
    # the H200 (ncu prints an unknown name as n/a and the run lists it under counters.metrics_na)
    verified: bool = True
    # "catalogue": evidence the cause catalogue added in session 8 (absent from older captures)
    group: str = ""


# Warp-state stall reasons: the counters' names (WarpStateStats: 4 replay passes for the 14 on
# the H200) and PC sampling's (one pass; "no_instruction" is "no_instructions" there)
STALL_REASONS: tuple[str, ...] = (
    "long_scoreboard",
    "short_scoreboard",
    "barrier",
    "mio_throttle",
    "lg_throttle",
    "math_pipe_throttle",
    "wait",
    "not_selected",
    "membar",
    "branch_resolving",
    "no_instruction",
    "tex_throttle",
    "drain",
    "sleeping",
)
STALL_COLUMNS = frozenset(f"stall_{reason}_pct" for reason in STALL_REASONS)
SAMPLE_COUNT = "smsp__pcsamp_sample_count"
SAMPLED_STALLS: dict[str, str] = {
    reason: "smsp__pcsamp_warps_issue_stalled_"
    + ("no_instructions" if reason == "no_instruction" else reason)
    for reason in STALL_REASONS
}


METRICS: tuple[Metric, ...] = (
    Metric(
        "ncu_duration_ms",
        "gpu__time_duration.sum",
        "ms",
        "sum",
        "kernel time measured by ncu (caches flushed, one launch replayed)",
        1e-6,
    ),
    Metric(
        "dram_throughput_pct",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "%",
        "wmean",
        "DRAM throughput as a share of the DRAM peak",
    ),
    Metric(
        "memory_throughput_pct",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "%",
        "wmean",
        "busiest memory unit (DRAM, L2, L1, shared) as a share of its peak",
    ),
    Metric(
        "sm_throughput_pct",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "%",
        "wmean",
        "busiest SM pipeline or issue stage as a share of its peak",
    ),
    Metric(
        "achieved_occupancy_pct",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "warps resident per active cycle as a share of the SM's maximum",
    ),
    Metric(
        "theoretical_occupancy_pct",
        "sm__maximum_warps_per_active_cycle_pct",
        "%",
        "wmean",
        "occupancy the launch configuration allows (registers, shared memory, block size)",
    ),
    Metric(
        "tensor_pipe_pct",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "Tensor Core (HMMA/HGMMA) pipe busy share of active cycles",
    ),
    Metric("l2_hit_pct", "lts__t_sector_hit_rate.pct", "%", "wmean", "L2 sector hit rate"),
    Metric("dram_bytes_read", "dram__bytes_read.sum", "B", "sum", "bytes read from DRAM"),
    Metric("dram_bytes_write", "dram__bytes_write.sum", "B", "sum", "bytes written to DRAM"),
    Metric("grid_size", "launch__grid_size", "blocks", "max", "blocks in the grid"),
    Metric("block_size", "launch__block_size", "threads", "max", "threads per block"),
    Metric(
        "registers_per_thread",
        "launch__registers_per_thread",
        "regs",
        "max",
        "registers allocated per thread",
    ),
    Metric(
        "shared_mem_static_bytes",
        "launch__shared_mem_per_block_static",
        "B",
        "max",
        "static shared memory per block",
    ),
    Metric(
        "shared_mem_dynamic_bytes",
        "launch__shared_mem_per_block_dynamic",
        "B",
        "max",
        "dynamic shared memory per block",
    ),
    Metric(
        "waves_per_sm",
        "launch__waves_per_multiprocessor",
        "waves",
        "max",
        "grid size over the blocks the GPU holds at once; under 1 is a partial wave",
    ),
    # blocks per SM each resource allows (the Occupancy section's limiters): which of shared
    # memory, registers, warps or the block limit caps theoretical occupancy
    *(
        Metric(
            f"occupancy_limit_{limit}",
            f"launch__occupancy_limit_{limit}",
            "blocks",
            "max",
            f"blocks per SM that {what} allow",
            verified=False,
            group="catalogue",
        )
        for limit, what in (
            ("shared_mem", "shared memory"),
            ("registers", "registers"),
            ("warps", "warps"),
            ("blocks", "the resident-block limit"),
        )
    ),
    # --- the device, as the report records it (reports from elsewhere carry no manifest) -----
    Metric("sm_count", "device__attribute_multiprocessor_count", "SMs", "max", "SMs on the GPU"),
    Metric(
        "cc_major",
        "device__attribute_compute_capability_major",
        "",
        "max",
        "compute capability, major",
    ),
    Metric(
        "cc_minor",
        "device__attribute_compute_capability_minor",
        "",
        "max",
        "compute capability, minor",
    ),
    # --- the clock ncu saw (Nsight Compute's SOL "SM Frequency"); roofs use the timing's ---
    Metric(
        "ncu_sm_clock_mhz",
        "gpc__cycles_elapsed.avg.per_second",
        "MHz",
        "wmean",
        "SM (GPC) clock during the kernel",
        1e-6,
    ),
    # --- pipes: which one a compute-bound kernel is bound on (ComputeWorkloadAnalysis) ---------
    Metric(
        "tensor_any_pct",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "Tensor pipe busy share, every instruction type (HMMA/HGMMA/IMMA/DMMA)",
    ),
    Metric(
        "tensor_imma_pct",
        "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "Tensor pipe busy share on integer (IMMA) instructions",
    ),
    Metric(
        "fma_pipe_pct",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "FMA pipe (FP32 multiply-add, FP16x2, IMAD) busy share of active cycles",
    ),
    Metric(
        "alu_pipe_pct",
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "ALU pipe (integer, logic, FP32 compare/min/max) busy share of active cycles",
    ),
    Metric(
        "xu_pipe_pct",
        "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "XU pipe (exp, rsqrt, sin, conversions) issue share of its peak",
    ),
    Metric(
        "lsu_pipe_pct",
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "LSU pipe (loads, stores, shared memory) issue share of its peak",
    ),
    Metric(
        "fp64_pipe_pct",
        "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "FP64 pipe busy share of active cycles",
    ),
    # --- the memory hierarchy (MemoryWorkloadAnalysis) -----------------------------------------
    Metric(
        "l1_throughput_pct",
        "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "L1/TEX (and shared memory) throughput as a share of its peak",
    ),
    Metric(
        "l2_throughput_pct",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "%",
        "wmean",
        "L2 throughput as a share of its peak",
    ),
    Metric("l1_hit_pct", "l1tex__t_sector_hit_rate.pct", "%", "wmean", "L1/TEX sector hit rate"),
    Metric(
        "global_ld_sectors",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "sectors",
        "sum",
        "32-byte sectors global loads fetched through L1",
        verified=False,
    ),
    Metric(
        "global_ld_requests",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "requests",
        "sum",
        "global load requests (one per warp-level load instruction)",
        verified=False,
    ),
    Metric(
        "global_st_sectors",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "sectors",
        "sum",
        "32-byte sectors global stores wrote through L1",
        verified=False,
    ),
    Metric(
        "global_st_requests",
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "requests",
        "sum",
        "global store requests",
        verified=False,
    ),
    Metric(
        "shared_bank_conflicts",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "conflicts",
        "sum",
        "shared-memory bank conflicts (extra wavefronts), loads and stores",
        verified=False,
    ),
    Metric(
        "shared_wavefronts",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        "wavefronts",
        "sum",
        "shared-memory wavefronts (passes through the data pipe), loads and stores",
        verified=False,
    ),
    # --- instruction mix (hardware counters; the SASS-instrumented per-opcode counters of
    # InstructionStats would make every pass slower, and --set full has them) ---------------------
    Metric(
        "inst_executed",
        "smsp__inst_executed.sum",
        "warp inst",
        "sum",
        "warp-level instructions executed",
        verified=False,
    ),
    Metric(
        "global_ld_inst",
        "smsp__inst_executed_op_global_ld.sum",
        "warp inst",
        "sum",
        "global load instructions executed (warp level)",
        verified=False,
    ),
    Metric(
        "global_st_inst",
        "smsp__inst_executed_op_global_st.sum",
        "warp inst",
        "sum",
        "global store instructions executed (warp level)",
        verified=False,
    ),
    # --- the cause catalogue's evidence (profkit/explain/catalogue.py). They cost the default
    # pass 1 replay pass (19 against 18 before, --set full 38, torch.add on the H200, session 8);
    # L2/SM slice balance, L2-side atomic counts and lanes per instruction were measured too
    # but left out: no cause reads them, and they cost a further pass. Every name below was
    # seen with values on the H200 in session 8's probe (ncu 2025.3.1), on kernels with the
    # cause: a one-warp 8192-wide row (spills), a 4-bin histogram (atomics), cuBLAS int8 and
    # bf16, a random gather (3.3x the ideal sectors) and torch.add (1.0x) ---------------------
    Metric(
        "global_ld_bytes_requested",
        "smsp__sass_data_bytes_mem_global_op_ld.sum",
        "B",
        "sum",
        "bytes global load instructions asked for (all active lanes): ideal sectors = this / 32",
        group="catalogue",
    ),
    Metric(
        "local_ld_bytes",
        "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
        "B",
        "sum",
        "local-memory bytes loaded (register spills, local arrays)",
        group="catalogue",
    ),
    Metric(
        "local_st_bytes",
        "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
        "B",
        "sum",
        "local-memory bytes stored (register spills, local arrays)",
        group="catalogue",
    ),
    Metric(
        "global_atom_requests",
        "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
        "requests",
        "sum",
        "global atomic requests (with a returned value)",
        group="catalogue",
    ),
    Metric(
        "global_red_requests",
        "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
        "requests",
        "sum",
        "global reduction requests (atomics without a returned value)",
        group="catalogue",
    ),
    Metric(
        "l2_atomic_busy_max_pct",
        "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed",
        "%",
        "max",
        "the busiest L2 slice's atomic unit, share of elapsed cycles (contention: max >> avg)",
        group="catalogue",
    ),
    Metric(
        "l2_atomic_busy_pct",
        "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "%",
        "wmean",
        "L2 atomic units busy, average over slices",
        group="catalogue",
    ),
    Metric(
        "branch_targets",
        "smsp__sass_branch_targets.sum",
        "targets",
        "sum",
        "branch targets taken (warp level)",
        group="catalogue",
    ),
    Metric(
        "branch_targets_divergent",
        "smsp__sass_branch_targets_threads_divergent.sum",
        "targets",
        "sum",
        "branch targets where the warp's lanes went different ways",
        group="catalogue",
    ),
    Metric(
        "issue_active_pct",
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "cycles a scheduler issued an instruction, share of active cycles",
        group="catalogue",
    ),
    Metric(
        "hmma_inst",
        "sm__inst_executed_pipe_tensor_op_hmma.sum",
        "warp inst",
        "sum",
        "HMMA instructions (fp16/bf16/tf32 mma.sync; also HFMA2.MMA constant moves)",
        group="catalogue",
    ),
    Metric(
        "gmma_inst",
        "sm__inst_executed_pipe_tensor_op_gmma.sum",
        "warp inst",
        "sum",
        "GMMA (wgmma) instructions, sm_90",
        group="catalogue",
    ),
    Metric(
        "imma_inst",
        "sm__inst_executed_pipe_tensor_op_imma.sum",
        "warp inst",
        "sum",
        "IMMA (integer mma) instructions",
        group="catalogue",
    ),
    Metric(
        "tensor_dmma_pct",
        "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active",
        "%",
        "wmean",
        "Tensor Core FP64 (DMMA) pipe busy share of active cycles",
        group="catalogue",
    ),
    *(
        Metric(
            f"stall_{reason}_pct",
            f"smsp__warp_issue_stalled_{reason}_per_warp_active.pct",
            "%",
            "wmean",
            f"share of active warps' cycles stalled on {reason.replace('_', ' ')} (WarpStateStats)",
            verified=False,
        )
        for reason in STALL_REASONS
    ),
)

# Sections whose NVIDIA rules produce the guided-analysis messages profkit quotes.
DEFAULT_SECTIONS: tuple[str, ...] = (
    "SpeedOfLight",
    "Occupancy",
    "LaunchStats",
    "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis",
)


# `profkit profile`'s counter pass, which runs once per chosen launch of a whole program: the stall
# shares from PC sampling (14 replay passes a launch against 19 with the counters and
# ComputeWorkloadAnalysis/MemoryWorkloadAnalysis on the H200, 2026-12-04: docs/measurements/
# h200-20261204-s12). Sampled shares matched the counters within 4 points there (long scoreboard
# 90.3% sampled against 89.7% counted on an elementwise kernel; barrier 32.7% against 30.6% on a
# cuBLAS GEMM). Those two sections only add rule messages; SpeedOfLight, Occupancy and LaunchStats
# cost no pass beyond the metrics.
PROFILE_METRICS: tuple[str, ...] = (
    *(m.ncu for m in METRICS if m.column not in STALL_COLUMNS),
    SAMPLE_COUNT,
    *SAMPLED_STALLS.values(),
)
PROFILE_SECTIONS: tuple[str, ...] = ("SpeedOfLight", "Occupancy", "LaunchStats")

# Derived columns: dram_bytes = read + write; shared_mem_bytes = static + dynamic;
# kernel_count = kernel launches in the case (per-kernel rows have 1).
DERIVED_COLUMNS = ("dram_bytes", "shared_mem_bytes", "kernel_count")
COUNTER_COLUMNS = tuple(m.column for m in METRICS) + DERIVED_COLUMNS
