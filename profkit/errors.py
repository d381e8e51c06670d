"""One exception for every expected failure: the CLI prints it on one line and exits 1."""


class ProfkitError(Exception):
    """A failure the user can act on; the message says the cause and, where known, the fix."""
