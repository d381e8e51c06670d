"""Every threshold `profkit explain` and `profkit compare` decide with, each with its source.

Sources are either Nsight Compute's own guided-analysis rules (the Python rule files shipped in its
`sections/` folder: SpeedOfLight's SOLBottleneck, LaunchStats' TailEffect, Occupancy's
AchievedOccupancy), NVIDIA documentation, measurements on the project's H200
(docs/gpu-facts.md and the runs kept under tests/data/), or a stated profkit choice
with the reason for it. Percentages are percent (0-100), times are milliseconds, like the columns
they are compared with.
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
# A grid of fewer than this many waves cannot fill the GPU's block slots (ncu's waves_threshold = 1;
# the SOLBottleneck message "grid is too small to fill the available resources"). profkit calls it a
# small grid only where that costs something: some SMs get no block, or at least TAIL_IDLE_SHARE of
# one wave's slots stay empty (a 0.97-wave grid keeps every SM busy).
SMALL_GRID_WAVES = 1.0

# --- Memory-bound detail --------------------------------------------------------------------------
# Without timing (a launch from a report), at or above this share of DRAM peak the kernel streams
# about as fast as the GPU can: no launch configuration change will help, only fewer bytes. ncu's
# peak is the DRAM's (4.8 TB/s on the H200); a device copy reaches only about 88% of it (4.22-4.25
# TB/s, docs/gpu-facts.md). A Triton vector add reached 89.5% there, torch.compile's RMSNorm
# 85.9-87.6% at 16384x8192 (97-99.6% of the measured copy,
# tests/data/runs/rmsnorm-20261130-014917-vm-4bc5). profkit choice: 85, just under those.
NEAR_PEAK_DRAM_PCT = 85.0
# memory_throughput_pct (busiest memory unit) this many points above dram_throughput_pct means the
# pressure is on L1/L2/shared memory rather than DRAM. profkit choice: the same 10-point gap ncu's
# SOLBottleneck uses to call one side busier than the other.
CACHE_BOUND_GAP_PCT = 10.0
# DRAM bytes measured by ncu at or above this multiple of the spec's minimum bytes: the kernel makes
# extra passes over its data. One extra read of the input of a read-once, write-once op (RMSNorm
# reading x twice) is 1.5x the minimum on paper, but writes still in L2 at the kernel's end lower
# the count: F.rms_norm, whose DRAM reads are 1.7-2.0x its input (x read twice), measured
# 1.33-1.48x the minimum at 16384x8192 on the H200 while the one-pass kernels measured 0.95-0.99x
# (tests/data/runs/rmsnorm-20261130-014917-vm-4bc5). profkit choice: 1.25, between the two.
EXCESS_DRAM_BYTES_RATIO = 1.25
# DRAM bytes measured by ncu under this multiple of the spec's minimum bytes: part of the data never
# crossed DRAM during the kernel (the L2 still held written lines at its end), so DRAM throughput
# understates the memory traffic. On the H200 the RMSNorm reads count exactly the input while
# about 26 MB of writes stay in the 60 MB L2: 0.95-0.99x the minimum at 16384x8192, 0.6-0.8x at
# 4096x4096-4096x8192 (tests/data/runs/rmsnorm-20261130-014917-vm-4bc5). profkit choice: 0.9.
L2_RESIDENT_BYTES_RATIO = 0.9

# --- Compute-bound detail -------------------------------------------------------------------------
# tensor_pipe_pct at or above this: the kernel is bound on the Tensor Cores. ncu SOL's 80% "high
# throughput" line; cuBLAS bf16 GEMMs run the pipe at 94.9-96.9% on the H200 (docs/gpu-facts.md).
TENSOR_BUSY_PCT = 80.0
# tensor_pipe_pct below this: the Tensor Cores do a negligible share of the work, so a compute-bound
# kernel is bound on the FMA/ALU pipes. profkit choice.
TENSOR_IDLE_PCT = 10.0

# tensor_pipe_pct under this: the kernel issues (almost) no MMA instructions at all, so its math is
# on the FMA pipe; at or above it, it runs on the Tensor Cores and is judged against their roof.
# profkit choice: 1%, above the pipe's idle noise (0.1-0.5% on the RMSNorm kernels,
# tests/data/runs/rmsnorm-20261130-014917-vm-4bc5). The pipe also counts HFMA2.MMA constant moves
# (up to 4.1% in kernels with no MMA, softmax run a879b0): explain's LaunchRecord.mma_kind also asks
# it to out-work the FMA pipe.
TENSOR_UNUSED_PCT = 1.0
# A pipe at or above this share of its peak does real work (not idle noise): the FP64 pipe's
# roof is the one a kernel off the Tensor Cores is judged against when its FP64 pipe is in use this
# much and the label is float64 or the FP64 pipe out-works the FMA pipe; a Tensor sub-pipe (IMMA,
# DMMA, HMMA) this busy names the kind of MMA. profkit choice: TENSOR_UNUSED_PCT's 1%, above the
# pipes' idle noise.
PIPE_IN_USE_PCT = 1.0
# A user matmul on the Tensor Cores under this share of their roof (at the clock it was timed at)
# is under-fed: its tiles are too small to reuse data or hide latency. profkit choice: cuBLAS
# reaches about 65-80% of the spec roof on the H200.
UNDERFED_ROOF_PCT = 40.0

# --- Latency-bound causes -------------------------------------------------------------------------
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
# Programs too small to amortize their launch: blocks of at most SMALL_PROGRAM_THREADS threads,
# whose theoretical occupancy is capped by the SM's resident-block limit (MAX_BLOCKS_PER_SM blocks
# of that size), over at least SMALL_PROGRAM_WAVES waves, and achieving under LOW_OCCUPANCY_RATIO
# of it: blocks retire about as fast as the SM can launch them. MAX_BLOCKS_PER_SM: 32 on compute
# capability 8.0 and 9.0 (CUDA C++ Programming Guide, "Compute Capabilities" table). The rest:
# profkit choice (issue 30's case: 32-thread programs, 2 million blocks, 8.8% achieved against
# 50% theoretical).
MAX_BLOCKS_PER_SM = 32
SMALL_PROGRAM_THREADS = 64
SMALL_PROGRAM_WAVES = 2.0
# Theoretical occupancy at or under this (rounded to 0.1): registers or shared memory per block
# cap the resident warps. profkit choice: 25% is 16 of the 64 warps an sm_90 SM holds, 4 per
# scheduler, too few to hide memory latency in a kernel without much instruction-level
# parallelism (CUDA Best Practices Guide, "Occupancy").
LOW_THEORETICAL_OCCUPANCY_PCT = 25.0
# One program per SM: the SM's resident-block limit holds one block (ncu's occupancy limiters,
# else theoretical occupancy that is one block's warps), a large one (theoretical occupancy above
# LOW_THEORETICAL_OCCUPANCY_PCT, else that entry says it), over at least ONE_BLOCK_WAVES waves, so
# each SM runs its programs one after another: while one waits at its barriers and reductions,
# no other program's loads are in flight. Under two waves the grid's shape (a small grid, a tail)
# is what an expert reads first. profkit choice (Liger's cross entropy: one 32-warp program per
# row, registers and warps allow one block, 62 waves, DRAM 48%,
# tests/data/holdout/ho_liger_ce-20261204-161945-vm-7cc4b7).
ONE_BLOCK_WAVES = 2.0
# A kernel ncu calls latency-bound is memory-bound instead where one program per SM (above) holds,
# its DRAM line is at or above its SM line, and its model's FLOP per byte is under this fraction of
# the FMA ridge (the FMA pipe's peak over the device copy's rate, about 15 FLOP/B on the H200):
# its time goes to streaming DRAM, and the SM cannot keep enough loads in flight to reach the
# latency line. Liger's cross entropy: 1.5 FLOP/B, DRAM 48% against SM 44%. profkit choice: a
# quarter, far enough under the ridge that no pipe can be the bound.
STREAM_RIDGE_FRACTION = 0.25
# Theoretical occupancy at this (rounded to 0.1) is the SM's maximum: 64 resident warps on sm_90;
# more warps per SM are impossible, so "launch more warps" is never the advice (ncu's Occupancy
# section reports it as a percentage of that maximum; counters carry float noise, 99.99999...).
FULL_OCCUPANCY_PCT = 100.0
# Two kernels' achieved occupancies within this many points hold about as many warps: when the
# slower one holds at least the faster one's warps less this gap, occupancy is not why it is slower.
# Below the faster one's by more, and with a lower theoretical occupancy, occupancy is the suspect.
# ncu's AchievedOccupancy rule uses the same 10-point gap between achieved and theoretical.
OCCUPANCY_GAP_PCT = 10.0
# Kernels shorter than this (ms) are paced by launch overhead when run back to back: a launch costs
# the host a few microseconds (NVIDIA's CUDA Graphs guidance), so many sub-5 us kernels are "launch
# overhead", and fusing them (or a CUDA graph) is the fix. profkit choice: 5 us.
SHORT_KERNEL_MS = 0.005

# --- Timing ---------------------------------------------------------------------------------------
# Whether two timings differ is decided in profkit/stats (95% interval of the ratio of medians and
# the unstable width, with their sources there), under these practical floors: A gap smaller than
# this share of the baseline is "noise" even when the interval excludes 1: two back-to-back captures
# of the same code on the H200 moved single cases by a few percent
# (docs/measurements/timing-repro-h200-20261130.md; issue 7's reproducibility goal asks for 5%).
# profkit choice: 2%.
PRACTICAL_FLOOR_PCT = 2.0
# A gap smaller than this many microseconds is "noise" at any size: the same code timed in two
# processes back to back on the H200 moved by up to 0.8 us at 3-13 us cases (TLB and launch
# latency after the flush differ per process), while cases over 20 us agreed within 2.1%
# (docs/measurements/timing-repro-h200-20261130.md). profkit choice: 1 us.
PRACTICAL_FLOOR_US = 1.0
# Two runs whose median SM clocks differ by more than this share ran at different clocks: their
# times are not comparable as they stand (profkit compare). profkit choice: 3%, above NVML's
# reading jitter.
CLOCK_MISMATCH_SHARE = 0.03
# At or above this share of the run's measured copy bandwidth (pct_peak_bw: the spec's minimum bytes
# over p50), the kernel moves its bytes about as fast as a device copy, so only fewer bytes can
# help. The measured copy is the practical roof (about 88% of ncu's DRAM peak on the H200), and
# torch.compile's RMSNorm reaches 98.6-99.6% of it at 16384x8192 on the H200
# (tests/data/runs/rmsnorm-20261130-014917-vm-4bc5), so under 95% a measurable margin is left.
# profkit choice: 95.
NEAR_COPY_CEILING_PCT = 95.0

# --- Roofs, pipes and the memory hierarchy (issue 9) ----------------------------------------------
# A pipe at or above this share of its peak is the one a compute-bound kernel is bound on; the same
# 80% "high throughput" line as ncu's SOL rule.
PIPE_BUSY_PCT = 80.0
# A same-size device copy is the DRAM roof a case of that many bytes can reach; at or above this
# share of it the case streams at the roof (as NEAR_COPY_CEILING_PCT against the large copy).
NEAR_SAME_SIZE_COPY_PCT = 95.0
# A case's DRAM reads at or above this multiple of the model's reads (or of the fewest read by any
# variant of the same case, which is the measured one-pass floor) re-read their input. F.rms_norm at
# bf16 4096x8192 reads 99.5 MB against 67.1 MB (1.48x), the one-pass kernels 1.00x
# (tests/data/runs/rmsnorm-20261130-014917-vm-4bc5). profkit choice: 1.25, between the two.
EXTRA_READS_RATIO = 1.25
# Global-load sectors fetched at or above this multiple of the bytes the model reads: most of every
# 32-byte sector is thrown away (strided or scattered access). A coalesced stream fetches 1.0x.
# profkit choice: 2.
UNCOALESCED_SECTOR_RATIO = 2.0
# Where the requested bytes were not collected (runs before session 8), sectors are judged against
# the model's bytes instead, which also counts deliberate re-reads served by L2 and cannot see the
# access width: F.rms_norm (x read twice, vectorized) read 2.3-3.5x there and was called
# uncoalesced, a false alarm; the strided copy of the explain suite (lane i reads x[8i]) read 4.5x
# (tests/data/runs/suite_strided-20261130-163645-vm-8ce3). profkit choice: 4, above the re-reads.
UNCOALESCED_MODEL_RATIO = 4.0
# Shared-memory bank conflicts at or above this share of the shared wavefronts: at least one access
# in three replays (NVIDIA's SharedMemoryConflicts rule flags any excess wavefronts; profkit asks
# for a share that costs time). profkit choice.
BANK_CONFLICT_SHARE = 0.33
# The dominant warp stall names the next step when it holds at least this share of the summed
# stall reasons (not_selected excluded: a warp not selected had an eligible peer). profkit choice.
DOMINANT_STALL_SHARE = 0.3
# Bank conflicts cost time through the stalls on shared memory (short scoreboard, MIO throttle):
# under this share of the stalls they are a fact, not the cause. The zoo's and suite's conflicted
# kernels: 36-78%; Inductor's batch-norm backward reduction on the H200 (session 10), 47.5% of
# its wavefronts conflicted: 10%, its time in long-scoreboard waits on its loads. profkit choice.
BANK_CONFLICT_STALL_SHARE = 0.2
# A faster sibling that moves the same bytes "shares" a case's dominant stall when its share of
# that stall is at least the case's less this many points: the stall then does not explain the
# gap (softmax fp16 16384x8192 against Liger, session 9: long scoreboard 39% of stalls in both,
# same launch and bytes; the gap was a load cache hint). profkit choice.
STALL_SHARED_POINTS = 5.0
# An arithmetic intensity (model FLOPs per model byte) at or above this marks a matrix product:
# only then is "move it onto the Tensor Cores" advice. Elementwise ops and reductions do about 1-4
# FLOP/B (RMSNorm: 0.75 at fp16); a 4096^3 bf16 GEMM about 1365. profkit choice: 32.
MATMUL_INTENSITY_FLOP_PER_BYTE = 32.0

# Latency-bound by the SOL lines, yet a memory level at HIGH_THROUGHPUT_PCT and at least this share
# of the stalls (not_selected excluded) waiting on full memory queues (lg_throttle + mio_throttle):
# the memory system refuses more requests, which a kernel short of loads in flight never makes it
# do, so memory is the bound. The zoo's random 4-byte gather: 49% of its stalls, L2 at 87.6%, SOL
# memory at 59.85%; every latency-bound row stored under tests/data (RMSNorm and softmax, L2 up to
# 85%) waits on those queues at most 11%; memory-bound streams 23-59%. profkit choice: the
# DOMINANT_STALL_SHARE's 0.3.
MEMORY_QUEUE_STALL_SHARE = 0.3

# --- NVIDIA's rules, judged -----------------------------------------------------------------------
# Occupancy and launch-shape rules are set aside where the kernel already saturates a roof: the
# Tensor pipe at or above this share (cuBLAS bf16 GEMMs: 94.9-96.9% on the H200, where ncu still
# estimates 81-87% "speedup" from occupancy)...
RULES_TENSOR_SATURATED_PCT = 80.0
# ... or DRAM at or above this share of its peak (as NEAR_PEAK_DRAM_PCT).
RULES_DRAM_SATURATED_PCT = 85.0

# --- Multi-kernel cases ---------------------------------------------------------------------------
# The bottleneck of a case of several launches is that of the launches holding at least this share
# of its time; otherwise it is mixed and each group is named. profkit choice: half.
DOMINANT_TIME_SHARE_PCT = 50.0
# One launch holding at least this share of a case's time is the case (a GEMM beside its split-K
# reduction or a tiny cast): it is judged on its own counters with the case's model. profkit
# choice: 80%.
DOMINANT_LAUNCH_PCT = 80.0
# An ATen elementwise launch in a float32 case reading at least this many times the DRAM bytes of a
# 16-bit GEMM beside it is that GEMM's operand cast from fp32 on the call (autocast's per-call
# weight cast: 4 bytes an element read for the 2 the GEMM reads). The zoo's autocast MLP (H200):
# the casts of w1 and w2 read 16.8 MB each beside GEMMs reading 8.5 and 8.9 MB. profkit choice:
# 1.5, under the 2x of a whole cast.
WEIGHT_CAST_READ_X = 1.5
# A launch under this share of its case's time never sets the case's first step, nor its owner's
# advice (a 3% memset before a 97% scatter). profkit choice (issue 30).
STEP_LAUNCH_SHARE_PCT = 10.0

# --- History --------------------------------------------------------------------------------------
# Between two versions of a kernel, occupancy moving by at least OCCUPANCY_GAP_PCT points while
# device time moved by less than this (%) is a change that had no effect: the step that made it is
# not advised again. The same 2% as PRACTICAL_FLOOR_PCT.
NO_EFFECT_TIME_PCT = 2.0

# --- Siblings: the other variants of the same case (same dtype and shape) ------------------------
# A sibling that moves the same bytes (or does the same FLOPs) faster is compared with the case on
# launch and traffic facts; an integer launch parameter (block size, grid, registers per thread)
# or the DRAM bytes differing by at least this factor either way is named as a difference
# (occupancies use OCCUPANCY_GAP_PCT).
# profkit choice: 1.25, the same margin as EXTRA_READS_RATIO.
SIBLING_LAUNCH_RATIO = 1.25
# Two cases' model FLOPs (or model bytes) within this relative tolerance are "the same work": the
# spec computes both from the shape, so they agree exactly; the tolerance absorbs float rounding.
SAME_WORK_TOLERANCE = 1e-6

# --- The cause catalogue (profkit/explain/catalogue.py) ----------------------------------------
# Each was checked on session 8's H200 probe (ncu 2025.3.1), on kernels with and without the cause.
# Local-memory bytes at or above this share of the L1 traffic to global and local memory: the
# registers spill. A one-warp Triton kernel holding an 8192-wide fp32 row moved 276 MB local
# against 134 MB global (0.67); no other kernel of the probe touched local memory. profkit choice.
SPILL_LOCAL_SHARE = 0.10
# Global atomics contend when the busiest L2 slice's atomic unit is at least this busy...
# (a 4-bin histogram: 79.7% on its busiest slice, 0.85% on average)
# (a privatized histogram, one update per program, kept the hot slice busy 29% while at the copy
# roof: busy, yet not what limits it). profkit choice: half the kernel's time.
ATOMIC_SLICE_BUSY_PCT = 50.0
# ... and at least this many times an average slice's: the updates pile onto a few addresses.
# Atomics spread over many addresses keep the slices alike. profkit choice.
ATOMIC_CONCENTRATION_X = 4.0
# Divergent branch targets at or above this share of all branch targets: lanes of a warp often
# take different paths (cuBLAS's bf16 GEMM: 0.07%). NVIDIA's ThreadDivergence rule reads active
# lanes per instruction instead, which masked tails lower without any divergence. profkit choice.
DIVERGENT_BRANCH_SHARE = 0.2
# A scheduler issuing on at least this share of active cycles, with no pipe at PIPE_BUSY_PCT, is
# bound on instruction issue: ncu SOL's 80% "high throughput" line.
ISSUE_BOUND_PCT = 80.0
# Global loads asking for at least this multiple of the bytes DRAM delivered: the kernel re-reads
# data that L2 serves. A stream asks for what DRAM delivers (1.0x: torch.add, the zoo's packed
# copy); the zoo's two-pass row kernel asked 1.64x, its L2-resident re-read 63x
# (tests/data/zoo). profkit choice: 1.5.
L2_REUSE_ASKED_X = 1.5
