"""profkit measure: a case's correctness and timings, on the GPU's and the host's clocks.

correctness (the float64 check that comes first), case_timing (a correct case's three timings),
devicetime (one call's GPU time, host off the critical path), hostcost (the CPU's cost of a call and
an eager loop's rate), clocks (SM and memory clocks while a case runs), step_latency (consecutive
decode steps and their tail), stats (is one timing really different from another).
"""
