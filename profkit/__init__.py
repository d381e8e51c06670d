"""profkit: profiling-first analysis of GPU kernels (timing, Nsight Compute counters, findings)."""

__version__ = "0.1.0"
