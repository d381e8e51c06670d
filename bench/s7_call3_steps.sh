# Session 7's third device call (bench/h200_job.sh bench/s7_call3_steps.sh): call 2's steps again
# (probe 10 and the ncu capture) after rowsplit_tma's spin polls became relaxed loads with one
# fence after them; a separate file, so the job runs under its own folder on a warm machine.
source bench/s7_call2_steps.sh
