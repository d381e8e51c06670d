"""The two schema-1 RMSNorm runs (v1 and v2, 2026-11-30 01:41 and 01:49 UTC) that the CLI and
dashboard tests were written against, as a profiles/ folder of their own: later runs committed to
profiles/ (other kernels, schema 2) must not change which run those tests call "the newest"."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLDER = "rmsnorm-20261130-014110-vm-83a4"
NEWEST = "rmsnorm-20261130-014917-vm-4bc5"
STORED = ROOT / "profiles"  # where the committed runs live


@cache
def v1_v2_profiles() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="profkit-v1v2-"))
    for run in (OLDER, NEWEST):
        (folder / run).symlink_to(STORED / run, target_is_directory=True)
    return folder


def stored_run(run_id: str) -> Path:
    """A committed run's directory, by id (the one place tests name where stored runs live)."""
    return STORED / run_id
