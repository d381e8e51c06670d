"""The stored H200 runs the tests read: the one place their paths live.

Runs stay out of git (profiles/ is ignored); the few that tests read are kept as tables (cases,
kernels, rules, manifest, samples; no raw .ncu-rep: no test reads one) under tests/data/runs/, and
the README's example run ships in the package (profkit/examples/). A test names a run by its id:
`run_path(RMSNORM_V2)`.
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_RUNS = ROOT / "tests" / "data" / "runs"
EXAMPLES = ROOT / "profkit" / "examples"
# runs with a peer library's variants (Liger-Kernel), kept apart so all_runs() stays the lab's
PEERS = ROOT / "tests" / "data" / "peers"

# the two schema-1 RMSNorm runs (v1 and v2, 2026-11-30 01:41 and 01:49 UTC) that the CLI and
# dashboard tests were written against
OLDER = "rmsnorm-20261130-014110-vm-83a4"
NEWEST = "rmsnorm-20261130-014917-vm-4bc5"
# the README's example: RMSNorm v4 with counters (profkit/examples/)
EXAMPLE = "rmsnorm-20261201-000553-vm-ffe590"
# `profkit profile` on examples/transformer_block.py (jobs/profile.toml, 2026-12-02 on the H200)
PROFILE_EXAMPLE = "transformer_block-20261202-050641-vm-3aaecc"


def run_path(run_id: str) -> Path:
    """A stored run's folder by its id (tests/data/runs/ or the shipped example)."""
    for folder in (DATA_RUNS, EXAMPLES, PEERS):
        if (folder / run_id).is_dir():
            return folder / run_id
    raise FileNotFoundError(f"no stored run {run_id} under {DATA_RUNS}, {EXAMPLES} or {PEERS}")


def all_runs() -> Path:
    """Every stored run as one profiles/ folder of links (for tests that read a folder)."""
    return _folder(*sorted(p.name for p in DATA_RUNS.iterdir()), EXAMPLE)


@cache
def _folder(*run_ids: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="profkit-runs-"))
    for run in run_ids:
        (folder / run).symlink_to(run_path(run), target_is_directory=True)
    return folder


def v1_v2_profiles() -> Path:
    """The two schema-1 RMSNorm runs alone as a profiles/ folder: later runs (other kernels,
    schema 2) must not change which run those tests call "the newest"."""
    return _folder(OLDER, NEWEST)


def stored_run(run_id: str) -> Path:
    """A committed run's directory, by id (the one place tests name where stored runs live)."""
    return run_path(run_id)


@cache
def explained(run_id: str):
    """explain_run of a stored run, once per process (a decode run's costs seconds): shared
    between tests, so read it and never change it."""
    from profkit import store
    from profkit.explain import explain_run

    return explain_run(store.load(run_path(run_id)))
