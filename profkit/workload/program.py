"""Which program the user asked for, and how to run it under profkit's child.

The timing pass runs the program inside profkit's own Python process (profkit.workload.child), so
it needs a Python program: `python SCRIPT.py ARGS` or `python -m MODULE ARGS`. The user's
arguments after the script or module pass through untouched.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from profkit.errors import ProfkitError

# python, python3, python3.12, /usr/bin/python3, pypy3 ...
_PYTHON_RE = re.compile(r"^(?:python|pypy)[0-9.]*$")
# interpreter options that take no value and change nothing the child must copy
_PLAIN_FLAGS = {"-u", "-B", "-O", "-OO", "-E", "-s", "-S"}


@dataclass(frozen=True)
class Program:
    """`python [flags] SCRIPT ARGS` (module=False) or `python [flags] -m MODULE ARGS`."""

    argv: tuple[str, ...]  # the command as the user gave it
    target: str  # the script's path or the module's name
    module: bool
    args: tuple[str, ...]  # the user's arguments, untouched

    @property
    def name(self) -> str:
        """The workload's name in the run: the script's stem or the module's last part."""
        stem = Path(self.target).stem if not self.module else self.target.rsplit(".", 1)[-1]
        return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "workload"

    def child_argv(
        self,
        export: Path | None,
        emit_nvtx: bool = False,
        start: tuple[str, int] | None = None,
        gate: Path | None = None,
    ) -> list[str]:
        """This program under profkit's child: profiled to `export`, or (None) run plainly, as
        the counter pass runs it, so that ncu sees the same launches (with emit_nvtx, each
        PyTorch op an NVTX range, which ncu's report then names; with start, (step range, K),
        the CUDA profiler started where that range opens the (K+1)th time; with gate, a file of
        counter_pass.write_gate, started only during the op calls it names)."""
        if export is not None:
            return self._child(["--export", str(export)])
        mode = ["--no-profile", *(["--emit-nvtx"] if emit_nvtx else [])]
        if gate is not None:
            mode += ["--gate", str(gate)]
        elif start is not None:
            mode += ["--step-range", start[0], "--start-at-step", str(start[1])]
        return self._child(mode)

    def pace_argv(self, out: Path, step_range: str) -> list[str]:
        """This program run plainly, the host clock read where each step range opens."""
        return self._child(["--pace", str(out), "--step-range", step_range])

    def _child(self, mode: list[str]) -> list[str]:
        target = ["-m", self.target] if self.module else [self.target]
        return [sys.executable, "-m", "profkit.workload.child", *mode, "--", *target, *self.args]


# this profkit's folder, put first on the child's PYTHONPATH so that the child is this profkit
# (not another one installed) wherever the user runs from; the child takes it off again
ROOT = str(Path(__file__).resolve().parents[2])
ROOT_ENV = "PROFKIT_CHILD_ROOT"
WAS_ENV = "PROFKIT_CHILD_PYTHONPATH"


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the child runs in: `env` (default ours) with this profkit importable."""
    env = dict(os.environ if env is None else env)
    was = env.get("PYTHONPATH")
    env[ROOT_ENV] = ROOT
    if was is not None:
        env[WAS_ENV] = was
    env["PYTHONPATH"] = ROOT if not was else ROOT + os.pathsep + was
    return env


@contextmanager
def child_environ() -> Iterator[None]:
    """Our environment as the child's while a program started by someone else (ncu) inherits it."""
    saved = dict(os.environ)
    os.environ.update(child_env())
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def restore_env() -> None:
    """In the child: the user's program sees the sys.path and PYTHONPATH it would have seen."""
    root = os.environ.pop(ROOT_ENV, None)
    if root is None:
        return
    if root in sys.path:
        sys.path.remove(root)
    was = os.environ.pop(WAS_ENV, None)
    if was is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = was


def parse_program(argv: Sequence[str]) -> Program:
    """The Python program in a command, or a one-line error naming what the timing pass needs."""
    if not argv:
        raise ProfkitError("no command given: profkit profile [OPTIONS] -- python SCRIPT.py ARGS")
    exe = os.path.basename(argv[0])
    if not _PYTHON_RE.match(exe):
        raise ProfkitError(
            f"{argv[0]!r} is not a Python interpreter: the timing pass runs the program under "
            "torch.profiler inside Python, so it needs `python SCRIPT.py ARGS` or "
            "`python -m MODULE ARGS`"
        )
    rest = list(argv[1:])
    while rest and rest[0] in _PLAIN_FLAGS:
        rest.pop(0)
    if rest[:1] == ["-m"] and len(rest) >= 2:
        return Program(tuple(argv), rest[1], True, tuple(rest[2:]))
    if not rest or rest[0].startswith("-"):
        said = rest[0] if rest else "nothing"
        raise ProfkitError(
            f"cannot profile `{' '.join(argv)}`: expected a script or -m MODULE after the "
            f"interpreter, found {said!r}"
        )
    script = Path(rest[0])
    if not script.is_file():
        raise ProfkitError(f"no such script: {rest[0]}")
    return Program(tuple(argv), str(script), False, tuple(rest[1:]))
