"""The run store: atomic writes, ids that never collide, resolution, damaged runs."""

import json
from pathlib import Path

import pandas as pd
import pytest
from stored_runs import run_path

from profkit import store
from profkit.errors import ProfkitError


def _write(root, kernel="k", created="2026-11-30T00:00:00+00:00", run_id=""):
    w = store.RunWriter(root, kernel, run_id=run_id)
    cases = {
        "kernel": [kernel],
        "variant": ["v"],
        "dtype": ["float16"],
        "shape": ["8x8"],
        "correct": [True],
        "device_p50_ms": [0.5],
    }
    w.write_table(store.CASES, pd.DataFrame(cases))
    return w.finish({"kernel": kernel, "created": created})


def test_round_trip(tmp_path):
    path = _write(tmp_path)
    run = store.load(path)
    assert run.manifest["complete"] is True and run.manifest["schema"] == store.SCHEMA
    assert run.run_id == path.name
    assert run.cases.device_p50_ms.tolist() == [0.5]
    assert run.kernels is None and run.timing_only


def test_one_dimensional_shapes_stay_text(tmp_path):
    # a sweep of 1-D shapes (vector_add, sum) is all digits: it must not come back as integers
    w = store.RunWriter(tmp_path, "k")
    cases = pd.DataFrame(
        {
            "kernel": ["k", "k"],
            "variant": ["v", "v"],
            "dtype": ["float32", "float32"],
            "shape": ["65536", "16777216"],
            "correct": [True, True],
            "device_p50_ms": [0.01, 0.05],
        }
    )
    w.write_table(store.CASES, cases)
    w.write_table(store.KERNELS, cases[["kernel", "shape"]])
    run = store.load(w.finish({"kernel": "k", "created": "2026-11-30T00:00:00+00:00"}))
    assert run.cases["shape"].tolist() == ["65536", "16777216"]
    assert run.kernels["shape"].tolist() == ["65536", "16777216"]


def test_unfinished_run_is_invisible_and_abandon_cleans(tmp_path):
    w = store.RunWriter(tmp_path, "k")
    w.write_table(store.CASES, pd.DataFrame({"a": [1]}))
    assert store.list_runs(tmp_path) == []  # a capture killed here leaves no run
    w.abandon()
    assert list(tmp_path.iterdir()) == []


def test_run_ids_never_collide(tmp_path):
    first = _write(tmp_path, run_id="same")
    second = _write(tmp_path, run_id="same")
    assert first != second and first.name == "same" and second.name.startswith("same-")
    assert json.loads((second / store.MANIFEST).read_text())["run_id"] == second.name
    assert store.load(first).cases.device_p50_ms.tolist() == [0.5]  # the first run is untouched
    ids = {store.new_run_id("rmsnorm") for _ in range(50)}
    assert len(ids) == 50


def test_newest_run_and_resolution(tmp_path):
    old = _write(tmp_path, created="2026-11-29T00:00:00+00:00")
    new = _write(tmp_path, created="2026-11-30T00:00:00+00:00")
    assert store.list_runs(tmp_path) == [old, new]
    assert store.resolve(None, tmp_path) == new
    assert store.resolve(old.name, tmp_path) == old
    assert store.resolve(str(old), tmp_path) == old


def test_resolution_errors(tmp_path):
    with pytest.raises(ProfkitError, match="no runs stored"):
        store.resolve(None, tmp_path)
    with pytest.raises(ProfkitError, match="no run named 'ghost'"):
        store.resolve("ghost", tmp_path)
    (tmp_path / "notarun").mkdir()
    with pytest.raises(ProfkitError, match="is not a profkit run"):
        store.resolve("notarun", tmp_path)


def test_damaged_run_is_a_clear_error(tmp_path):
    path = _write(tmp_path)
    (path / store.CASES).write_text("")
    with pytest.raises(ProfkitError, match="damaged: cases.csv is cut short"):
        store.load(path)  # its manifest's checksum finds it first
    store.seal(path)  # a run that vouches for an empty table is still no run
    with pytest.raises(ProfkitError, match="not a readable profkit run"):
        store.load(path)


def test_run_missing_columns_or_id_is_a_clear_error(tmp_path):
    path = _write(tmp_path)
    (path / store.CASES).write_text("a,b\n1,2\n")
    store.seal(path)  # checksums that match: the columns are what is wrong
    with pytest.raises(ProfkitError, match="cases.csv lacks kernel, variant"):
        store.load(path)
    other = _write(tmp_path)
    manifest = json.loads((other / store.MANIFEST).read_text())
    del manifest["run_id"]
    (other / store.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ProfkitError, match="manifest.json does not match its own checksum"):
        store.load(other)  # an edit to the manifest is found as an edit to a table is
    store.seal(other)  # a manifest that vouches for itself without a run_id is still no run
    with pytest.raises(ProfkitError, match="has no run_id"):
        store.load(other)


def test_a_schema_1_run_reads_under_the_schema_2_names() -> None:
    """The committed v1/v2 RMSNorm runs were stored as schema 1 (event time around the call)."""
    run = store.load(run_path("rmsnorm-20261130-014917-vm-4bc5"))
    assert run.manifest["schema"] == 1 and run.samples is None
    raw = pd.read_csv(run.path / store.CASES)
    assert "p50_ms" in raw.columns and "device_p50_ms" not in raw.columns
    cases = run.cases
    assert cases.device_p50_ms.tolist() == raw.p50_ms.tolist()
    assert cases.device_iqr_ms.tolist() == raw.spread_ms.tolist()
    assert cases.device_reps.tolist() == raw.reps.tolist()
    assert set(cases.device_method) == {store.SCHEMA1_METHOD}
    assert cases.host_in_window.tolist() == [True] * len(cases)  # events around the Python call
    assert cases[["host_us", "loop_us", "sm_clock_mhz"]].isna().all().all()


def test_runs_stored_before_the_clock_fields_read_them_from_clock_note() -> None:
    """The power-capped matmul run f75dcf stored only clock_note ("sw_power_cap", or "sm clock X of
    Y MHz; sw_power_cap"); it reads with the fields a capture now writes beside the note."""
    run = store.load(run_path("matmul-20261201-033940-vm-f75dcf"))
    raw = pd.read_csv(run.path / store.CASES)
    assert "clock_throttled" not in raw.columns and "host_in_window" not in raw.columns
    noted = raw.clock_note.notna().tolist()
    assert 0 < sum(noted) < len(noted)
    assert run.cases.clock_throttled.tolist() == noted
    reasons = run.cases.throttle_reasons.fillna("").tolist()
    assert reasons == ["sw_power_cap" if n else "" for n in noted]
    assert run.cases.host_in_window.tolist() == [False] * len(raw)  # CUDA-graph replay


def test_a_run_with_the_clock_fields_reads_them_as_stored() -> None:
    cases = pd.DataFrame({"device_method": ["graph"], "host_in_window": [False],
                          "sm_clock_mhz": [1500.0], "clock_note": ["sm clock 1500 of 1980 MHz"],
                          "clock_throttled": [True], "throttle_reasons": [None]})  # fmt: skip
    assert store.upgrade({"schema": 2}, cases.copy()).equals(cases)


def test_a_kernel_name_resolves_to_its_newest_gpu_run(tmp_path: Path) -> None:
    for kernel, created in (("k1", "2026-01-01"), ("k1", "2026-01-03"), ("k2", "2026-01-04")):
        writer = store.RunWriter(tmp_path, kernel)
        writer.write_table(store.CASES, pd.DataFrame({"kernel": [kernel]}))
        writer.finish({"kernel": kernel, "created": created})
    interp = store.RunWriter(tmp_path, "k1")
    interp.write_table(store.CASES, pd.DataFrame({"kernel": ["k1"]}))
    interp.finish({"kernel": "k1", "created": "2026-01-05", "mode": "interpret"})
    newest_k1 = store.resolve("k1", tmp_path)
    assert json.loads((newest_k1 / store.MANIFEST).read_text())["created"] == "2026-01-03"
    assert store.resolve(None, tmp_path).name.startswith("k2-")
    with pytest.raises(ProfkitError, match="no run named 'k3'"):
        store.resolve("k3", tmp_path)


def test_repeated_timing_columns_of_stored_runs_fold_into_one() -> None:
    """Runs captured before the fix carry their timing columns twice; readers see each once."""
    path = run_path("vector_add-20261130-162740-vm-98c9")
    raw = pd.read_csv(path / store.CASES)
    assert "device_p50_ms.1" in raw.columns  # as stored
    cases = store.load(path).cases
    assert not [c for c in cases.columns if c.endswith(".1")]
    assert cases.device_p50_ms.tolist() == raw.device_p50_ms.tolist()


def test_a_differing_repeat_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path)
    cases = pd.read_csv(path / store.CASES)
    cases["device_p50_ms.1"] = 0.7  # not a copy: someone's own column, kept
    cases.to_csv(path / store.CASES, index=False)
    store.seal(path)
    assert store.load(path).cases["device_p50_ms.1"].tolist() == [0.7]


def test_every_stored_run_has_one_kind_read_at_load() -> None:
    """Issue 32: a run's kind is read once, at load: the manifest's where it says one (runs stored
    since kinds), else from what the run holds (a decode run's iteration columns)."""
    data = Path(__file__).parent / "data"
    seen = set()
    for manifest in sorted(data.glob("*/*/manifest.json")):
        run = store.load(manifest.parent, force=True)
        m = run.manifest
        want = (
            store.DECODE
            if m["kernel"] == "decode"  # stored before kinds: its iteration columns say it
            else store.PROFILE
            if "program" in m
            else store.TUNE
            if "tuned_kernel" in m
            else store.CAPTURE
        )
        assert run.kind == want, manifest.parent.name
        seen.add(run.kind)
    assert seen == set(store.RUN_KINDS)
