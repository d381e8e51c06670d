"""profkit counters: Nsight Compute's hardware counters, from the child process to one row per case.

ncu (the `ncu` child process and every way it fails), metrics (the curated metric table), ncu_rep
(a .ncu-rep report -> tidy tables, through NVIDIA's ncu_report), sourcelines (per-source-line
counters), sourcepass (the `--source` pass over each case's dominant launch), join (launch counters
folded per case and joined to the timing table).
"""
