"""Where the kernel lab lives. A leaf: spec finds the lab's kernels there and explain reads its
notebook there, without importing one another."""

from __future__ import annotations

from pathlib import Path


def lab_dir() -> Path:
    """The lab's kernels/ folder: the one beside profkit/ in a checkout (so a checkout or worktree
    runs its own lab, whatever is installed), else the installed package `profkit_lab` (it is never
    importable as `kernels`, a name PyPI already uses)."""
    beside = Path(__file__).resolve().parent.parent / "kernels"
    if beside.is_dir():
        return beside
    import profkit_lab  # type: ignore[import-not-found]

    return Path(list(profkit_lab.__path__)[0])
