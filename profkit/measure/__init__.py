"""profkit measure: a case's correctness and timings, on the GPU's and the host's clocks.

correctness (the float64 check that comes first), case_timing (a correct case's three timings),
devicetime (one call's GPU time, host off the critical path), hostcost (the CPU's cost of a call and
an eager loop's rate), clocks (SM and memory clocks while a case runs), iteration_latency
(consecutive decode iterations, each timed, and their tail). The statistics on what they measure
are profkit.stats'.
"""
