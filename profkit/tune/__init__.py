"""`profkit tune`: counters propose the configurations, a sweep measures them, explain says why.

space (a variant's tunables: the grid, names, the spec whose variants are configurations), steps
(explain's typed next steps -> moves of the parameters), loop (capture, explain, propose, repeat;
the stored run of kind "tune"), why (the winner against the shipped configuration: its interval and
the counters that changed), cluster_round (one round as a Dask sweep).
"""
