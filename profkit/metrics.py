"""The curated Nsight Compute metric set: one table, the single source of names and meanings.

Every counter column in profkit's tables comes from a row here. The ncu names were checked on the
project's H200 (Nsight Compute 2025.3.1, sm_90); see ../shared/notes/gpu-facts.md in the steering
repo. `agg` says how a case that launches several kernels folds its kernel rows into one:
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
)

# Sections whose NVIDIA rules produce the guided-analysis messages profkit quotes.
DEFAULT_SECTIONS: tuple[str, ...] = (
    "SpeedOfLight",
    "Occupancy",
    "LaunchStats",
    "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis",
)


# Derived columns: dram_bytes = read + write; shared_mem_bytes = static + dynamic;
# kernel_count = kernel launches in the case (per-kernel rows have 1).
DERIVED_COLUMNS = ("dram_bytes", "shared_mem_bytes", "kernel_count")
COUNTER_COLUMNS = tuple(m.column for m in METRICS) + DERIVED_COLUMNS
