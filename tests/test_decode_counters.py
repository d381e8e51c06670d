"""The decode lab's counter pass (jobs/decode_capture.py, Lab.counters) off the GPU.

- Its failure path end to end: in tests/test_decode_bench.py (the same bench run).
- Its join: a real per-launch table (the 8 launches of eager RMSNorm at bfloat16 1x4096, from the
  stored H200 run rmsnorm-20261130-162158-vm-f1ea) relabelled as the decode case
  decode.eager.bfloat16.1x2048, through the same aggregate_cases + join the bench uses, into a copy
  of the stored decode run: explain and the dashboard must drill down per launch for that case.
  The relabelled launches are rmsnorm's, not decode's: this checks the join, not any figure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
from stored_runs import explained, run_path

from profkit import dashboard, store
from profkit.counters.join import aggregate_cases, join
from profkit.dashboard import launches as launches_view
from profkit.explain import explain_run

ROOT = Path(__file__).resolve().parent.parent
DECODE = run_path("decode-20261130-164018-vm-d2d4")
RMSNORM = run_path("rmsnorm-20261130-162158-vm-f1ea")
SOURCE_CASE = "rmsnorm.eager.bfloat16.1x4096"
TARGET_CASE = "decode.eager.bfloat16.1x2048"


def _bench(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, str(ROOT / "jobs" / "decode_capture.py"), "--device", "cpu"]
    argv += ["--out", str(tmp_path), "--steps", "12", "--warmup", "2", "--batches", "1"]
    argv += ["--caches", "8", "--probe-caches", "8", "--dynamic-cache", "12", "--walk", "2,4"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*argv, *extra], capture_output=True, text=True, env=env, timeout=300)


def test_counter_shape_outside_the_sweep_is_refused(tmp_path):
    done = _bench(tmp_path, "--cpu-counters", "--counter-shape", "1,2048")
    assert done.returncode == 2 and "not in the sweep" in done.stderr


def _decode_run_with_launches(tmp_path: Path) -> store.Run:
    path = tmp_path / DECODE.name
    shutil.copytree(DECODE, path)
    kernels = pd.read_csv(store.table_file(RMSNORM, store.KERNELS), dtype={"shape": str})
    kernels = kernels[kernels["case"] == SOURCE_CASE].copy()
    assert len(kernels) == 8
    kernels = kernels.assign(case=TARGET_CASE, kernel="decode", variant="eager", shape="1x2048")
    kernels.to_csv(path / store.KERNELS, index=False)
    timing = store.load(path).cases  # the stored run, read as the current layout
    joined = join(timing, aggregate_cases(kernels))
    joined.to_csv(path / store.CASES, index=False)
    manifest = json.loads((path / store.MANIFEST).read_text())
    manifest["counters"] = {"status": "ok"}
    (path / store.MANIFEST).write_text(json.dumps(manifest))
    return store.load(path)


def test_launches_join_to_the_decode_case_and_drill_down(tmp_path):
    run = _decode_run_with_launches(tmp_path)
    row = run.cases.set_index("case").loc[TARGET_CASE]
    assert row["kernel_count"] == 8
    assert row["step_p50_ms"] > 0 and pd.isna(row["device_p50_ms"])
    others = run.cases[run.cases["case"] != TARGET_CASE]
    assert others["kernel_count"].isna().all()
    report = explain_run(run)
    found = [f for f in report.findings if f.case == TARGET_CASE and f.kind.value == "case"]
    assert len(found) == 1 and len(found[0].launches) == 8
    assert found[0].bottleneck is not None
    assert launches_view.launches_figure(run) is not None
    html = dashboard.build_dashboard([run], {run.run_id: report}, (), "shared")
    assert "run0-plot-launches" in html and "run0-plot-counters0" in html


COUNTED = "decode-20261130-184819-vm-acb534"


def test_fused_step_drill_down_names_aten_kernels_as_aten():
    """The stored H200 run with counters (eager and fused at bfloat16 1x2048): the fused step is a
    lab variant, but only its two _rmsnorm_kernel launches are Triton; the PyTorch ops around them
    (elementwise, index, softmax) stay ATen and the GEMMs cuBLAS, as in the eager step."""
    report = explained(COUNTED)
    by_case = {f.case: f for f in report.findings if f.launches}
    assert set(by_case) == {"decode.eager.bfloat16.1x2048", "decode.fused.bfloat16.1x2048"}
    fused = by_case["decode.fused.bfloat16.1x2048"].launches
    assert len(fused) == 27 and len(by_case["decode.eager.bfloat16.1x2048"].launches) == 41
    triton = {x.name for x in fused if x.family == "triton"}
    assert triton == {"_rmsnorm_kernel"}
    fams = {x.name: x.family for x in fused}
    assert fams["vectorized_elementwise_kernel"] == "aten_elementwise"
    assert fams["index_elementwise_kernel"] == "aten_other"
    assert fams["cunn_SoftMaxForwardReg"] == "aten_norm"
    assert fams["splitKreduce_kernel"] == "cublas"


def test_lab_kernels_resembling_aten_names_stay_triton():
    from profkit.explain.launches import launch_family

    for name in ("_softmax_rows_kernel", "_splitk_reduce_kernel", "_rmsnorm_kernel"):
        assert launch_family({"kernel_name": name}, lab=True) == "triton"
    assert launch_family({"kernel_name": "reduce_kernel"}, lab=True) == "aten_reduce"
    assert launch_family({"kernel_name": "nvjet_sm90_tst_x"}, lab=True) == "cublas"


def test_summary_names_the_profiled_steps_largest_launches():
    """`profkit explain RUN` (no --variant): the profiled eager and fused steps each get a line of
    their drill-down, their largest launches first (here the MLP's up projection, a cuBLAS GEMM)."""
    import io

    from rich.console import Console

    from profkit.explain.render import render_terminal

    console = Console(file=io.StringIO(), width=400, record=True)
    render_terminal(explained(COUNTED), console)
    text = console.export_text()
    # the default view keeps to one screen per kernel (issue 22): the eager step's drill-down
    # leads; what the budget leaves out is said, and --variant shows it
    assert "decode eager bfloat16 1x2048  " in text and "(--variant eager for all 41)" in text
    first = text.split("largest launches: ")[1]
    assert first.startswith("nvjet_sm90_tst_256x8_64x6_4x1_v_bz_TNT [cublas] 20% (memory)")
    for variant in ("eager", "fused"):
        console = Console(file=io.StringIO(), width=400, record=True)
        render_terminal(explained(COUNTED), console, variant=variant)
        assert f"decode {variant} bfloat16 1x2048  " in console.export_text()
