"""A run kept as a reference holds rules.csv xz-compressed (tools/promote_run.py): profkit reads it
as it reads the plain table, and checks it against the manifest's record of the plain bytes."""

from __future__ import annotations

import lzma
import shutil
import sys
from pathlib import Path

import pytest
from stored_runs import ROOT, run_path

from profkit import store
from profkit.errors import ProfkitError

sys.path.insert(0, str(ROOT / "tools"))
from promote_run import promote  # noqa: E402

RUN = "softmax-20261202-022225-vm-2ee1ba"  # a run whose manifest holds checksums


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """The stored run as capture wrote it: rules.csv plain, beside the raw report's absence."""
    run = shutil.copytree(run_path(RUN), tmp_path / "plain" / RUN)
    packed = run / f"{store.RULES}.xz"
    (run / store.RULES).write_bytes(lzma.decompress(packed.read_bytes()))
    packed.unlink()
    return run


def test_a_promoted_run_reads_as_the_captured_one(plain: Path, tmp_path: Path) -> None:
    kept = promote(plain, tmp_path / "kept" / RUN)
    assert not (kept / store.RULES).exists() and (kept / f"{store.RULES}.xz").is_file()
    before, after = store.load(plain), store.load(kept)
    assert after.rules is not None and after.rules.equals(before.rules)
    assert after.cases.equals(before.cases)


def test_a_compressed_table_that_changed_is_damage(plain: Path, tmp_path: Path) -> None:
    kept = promote(plain, tmp_path / "kept" / RUN)
    text = lzma.decompress((kept / f"{store.RULES}.xz").read_bytes()).replace(b"a", b"b", 1)
    (kept / f"{store.RULES}.xz").write_bytes(lzma.compress(text))
    with pytest.raises(ProfkitError, match="rules.csv.xz does not hold the rules.csv"):
        store.load(kept)
    (kept / f"{store.RULES}.xz").write_bytes(b"not xz")
    with pytest.raises(ProfkitError, match="does not decompress"):
        store.load(kept)
