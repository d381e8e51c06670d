"""profkit's exit statuses, one place for the CLI, its --help and the README's table, so that CI
can tell a wrong kernel from a broken command. (`doctor` keeps its own 0/1/2, in its --help.)"""

OK = 0  # the command did what was asked; capture: every case correct
ERROR = 1  # bad input, a damaged run, a failure: one line on stderr says which
USAGE = 2  # click's usage errors (an unknown option, a missing argument)
INCORRECT = 3  # capture: the run is stored, and at least one case is incorrect (summary on stderr)
NOTHING_MEASURED = 4  # capture: the run is stored, but no case was correct: nothing was measured
SLOWER = 5  # compare --fail-on slower: a case of B is significantly slower than in A
INTERRUPTED = 130  # Ctrl-C

HELP = (
    "Exit status: 0 success (capture: every case correct); 1 error, one line on stderr; "
    "2 usage error; 3 capture stored a run with incorrect cases; 4 capture measured nothing "
    "(no case correct); 5 compare --fail-on slower found a case significantly slower; "
    "130 interrupted. doctor has its own (see `profkit doctor --help`)."
)
