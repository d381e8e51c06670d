"""`profkit profile -- COMMAND...`: a user's own program, profiled (issue 24).

Stages: program (which command, run how) -> child (the program under torch.profiler, one export
file) -> trace (a Chrome trace -> that export) -> timing_pass (launches -> steps, kernel groups,
shares, host gaps) -> counter_pass (ncu on the top groups' launches) -> profile (join and store a
run like a capture's) -> explain (a workload's findings, headline first). Only child imports torch.
"""
