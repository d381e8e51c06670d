"""How a failure reads on the command line: one short line, whatever raised it.

Errors from the system (a name too long for the file system, a full disk, no permission) are the
user's to fix, so they end as one line, never a traceback. A failure to write standard output is
told apart from the rest by a guard around sys.stdout: a reader that went away (`| head -1`) is
no error, as for git; any other write failure (`> /dev/full`) is.
"""

from __future__ import annotations

import errno
import re
from typing import Any

# a word longer than this in an error line (a 5000-character name, a program's stderr) is cut in
# its middle to its two ends of CUT_END characters: the line stays one screen line or two
LONGEST_WORD = 120
CUT_END = 32


class OutputLost(Exception):
    """Standard output could not be written (its OSError is the cause). Not an OSError, so that
    no handler of file errors (rich's broken-pipe exit among them) takes it for one."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error

    @property
    def reader_gone(self) -> bool:
        """The reader closed the pipe: what it read is all it wanted."""
        return self.error.errno == errno.EPIPE


class GuardedOutput:
    """sys.stdout, whose write and flush failures raise OutputLost; all else passes through."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: Any) -> int:
        try:
            return self.stream.write(text)
        except OSError as exc:
            raise OutputLost(exc) from exc

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            raise OutputLost(exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def cut_long_words(text: str, longest: int = LONGEST_WORD) -> str:
    """text with each word (no space, no quote) longer than `longest` cut in the middle."""

    def cut(m: re.Match) -> str:
        word = m.group(0)
        return f"{word[:CUT_END]}...({len(word)} characters)...{word[-CUT_END:]}"

    return re.sub(rf"[^\s'\"]{{{longest + 1},}}", cut, text)


def os_error_line(exc: OSError) -> str:
    """An OSError as the user can act on it: what failed, and on which file."""
    what = exc.strerror or str(exc) or type(exc).__name__
    return what if exc.filename is None else f"{what}: {exc.filename!r}"
