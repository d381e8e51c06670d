"""One exception type for every expected failure: the CLI prints its message on one line and exits 1."""


class ProfkitError(Exception):
    """A failure the user can act on; the message says the cause and, where there is one, the fix."""
