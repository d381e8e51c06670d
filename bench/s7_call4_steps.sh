# Session 7's fourth device call (bench/h200_job.sh bench/s7_call4_steps.sh): call 2's steps again
# after rowsplit_tma's wait became one poller per program (thread 0) and a named-barrier
# reduction (call 3: every thread polling took 46% of the samples).
source bench/s7_call2_steps.sh
