"""Every threshold `profkit explain` and `profkit compare` decide with, each with its source.

Sources are either Nsight Compute's own guided-analysis rules (the Python rule files shipped in its
`sections/` folder: SpeedOfLight's SOLBottleneck, LaunchStats' TailEffect, Occupancy's
AchievedOccupancy), NVIDIA documentation, measurements on the project's H200
(../shared/notes/gpu-facts.md), or a stated profkit choice with the reason for it. Percentages are
percent (0-100), times are milliseconds, like the columns they are compared with.
"""

from __future__ import annotations

# --- Speed of light: the bottleneck (ncu SOLBottleneck rule, values copied from it) ---------------
# sm_throughput_pct or memory_throughput_pct at or above this is "high throughput": that unit is the
# bottleneck (ncu's no_bound_threshold = 80).
HIGH_THROUGHPUT_PCT = 80.0
# Both SM and memory throughput below this: the kernel is latency-bound, neither unit is busy
# (ncu's latency_bound_threshold = 60).
LATENCY_BOUND_PCT = 60.0
# Between the two lines, a gap of at least this many points names the busier side; a smaller gap
# is "balanced" (ncu's balanced_threshold = 10).
SOL_GAP_PCT = 10.0
# A grid of fewer than this many waves cannot occupy every SM: "small grid" (ncu's
# waves_threshold = 1; the SOLBottleneck message "grid is too small to fill the available
# resources").
SMALL_GRID_WAVES = 1.0

# --- Memory-bound detail ----------------------------------------------------------------------
# At or above this share of DRAM peak the kernel streams about as fast as the GPU can: no launch
# configuration change will help, only fewer bytes (fusion, data reuse). profkit choice, from the
# H200 (gpu-facts.md): a Triton vector add, about the simplest stream, reached 89.5% of DRAM peak.
NEAR_PEAK_DRAM_PCT = 90.0
# memory_throughput_pct (busiest memory unit) this many points above dram_throughput_pct means the
# pressure is on L1/L2/shared memory rather than DRAM. profkit choice: the same 10-point gap ncu's
# SOLBottleneck uses to call one side busier than the other.
CACHE_BOUND_GAP_PCT = 10.0
# DRAM bytes measured by ncu at or above this multiple of the spec's minimum bytes: the kernel makes
# extra passes over its data. profkit choice: one extra read of the input of a read-once,
# write-once op (e.g. RMSNorm reading x twice) is 1.5x the minimum.
EXCESS_DRAM_BYTES_RATIO = 1.5

# --- Compute-bound detail ---------------------------------------------------------------------
# tensor_pipe_pct at or above this: the kernel is bound on the Tensor Cores. ncu SOL's 80% "high
# throughput" line; cuBLAS bf16 GEMMs run the pipe at 94.9-96.9% on the H200 (gpu-facts.md).
TENSOR_BUSY_PCT = 80.0
# tensor_pipe_pct below this: the Tensor Cores do a negligible share of the work, so a compute-bound
# kernel is bound on the FMA/ALU pipes. profkit choice.
TENSOR_IDLE_PCT = 10.0

# --- Latency-bound causes ---------------------------------------------------------------------
# Tail effect: with at least one full wave, the share of the launch's block slots the partial last
# wave leaves idle, (ceil(w) - w) / ceil(w), at or above this. ncu's TailEffect rule flags a
# partial wave when 1 / (full waves + 1) >= 0.2; profkit also weighs how empty the last wave is, so
# 1.1 waves (45% idle) is flagged and 1.9 waves (5% idle) is not. profkit choice.
TAIL_IDLE_SHARE = 0.25
# Achieved occupancy under this fraction of the theoretical one: warps the launch could hold are
# missing most of the time (imbalance, tail, short blocks). ncu's AchievedOccupancy rule reports any
# gap over 10 points; profkit names occupancy as the cause only at under half, since latency-bound
# kernels commonly show 10-20 point gaps without occupancy being what limits them. profkit choice.
LOW_OCCUPANCY_RATIO = 0.5
# Theoretical occupancy under this: registers or shared memory per block cap the resident warps.
# profkit choice: 25% is 16 of the 64 warps an sm_90 SM holds, 4 per scheduler, too few to hide
# memory latency in a kernel without much instruction-level parallelism (CUDA Best Practices Guide,
# "Occupancy").
LOW_THEORETICAL_OCCUPANCY_PCT = 25.0
# Kernels shorter than this (ms) are paced by launch overhead when run back to back: a launch costs
# the host a few microseconds (NVIDIA's CUDA Graphs guidance), so many sub-5 us kernels are "launch
# overhead", and fusing them (or a CUDA graph) is the fix. profkit choice: 5 us.
SHORT_KERNEL_MS = 0.005

# --- Timing ----------------------------------------------------------------------------------
# A latency difference no larger than this multiple of the larger spread_ms (inter-quartile range)
# of the two cases is noise, a tie (docs/tables.md: "a difference smaller than the larger spread is
# noise"; at exactly the spread it is still not shown to be real).
NOISE_SPREAD_MULTIPLE = 1.0
# Timing only: at or above this share of the run's measured copy bandwidth (pct_peak_bw), the kernel
# moves its minimum bytes about as fast as a device copy does, so only fewer bytes can help.
# profkit choice, the same line as NEAR_PEAK_DRAM_PCT.
NEAR_COPY_CEILING_PCT = 90.0
