"""The per-SM peak table (profkit.peaks) and the roof that follows the measured pipe
(explain.roofs.pipe_roof): the table's shape and sources, roofs on the committed H200 runs and the
cuBLAS bf16 report, and constructed rows for the pipes no stored run exercises (IMMA, DMMA, FP64).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from stored_runs import run_path
from test_explain import COMPUTE, SM_COUNT, case, one_case, run_of

from profkit import peaks, store
from profkit.dashboard import roofline
from profkit.explain import explain_run
from profkit.explain.evidence import Evidence
from profkit.explain.model import FindingKind
from profkit.explain.record import LaunchRecord
from profkit.explain.render import facts
from profkit.explain.roofs import Device, compute_roof, pipe_roof, roof_pipe
from profkit.measure.correctness import check
from profkit.spec import DTYPE_ITEMSIZE, KernelSpec, Variant, normalize_dtype

ROOT = Path(__file__).resolve().parents[1]
GEMM = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096.0, "device_p50_ms": 0.7}


# --- the table ------------------------------------------------------------------------------------


def test_the_table_covers_ampere_to_blackwell_with_a_source_for_every_entry() -> None:
    assert list(peaks.TABLE) == ["8.0", "8.6", "8.9", "9.0", "10.0", "12.0"]
    for cc, a in peaks.TABLE.items():
        assert a.cc == cc and a.name and "NVIDIA" in a.source
        assert set(a.rates) <= set(peaks.PIPES)
        assert all(isinstance(v, int) and v > 0 for v in a.rates.values())
        # every kind is either a rate or left out with a reason, never both, never silent
        assert not set(a.rates) & set(a.left_out)
        assert set(a.rates) | set(a.left_out) == set(peaks.PIPES), cc
        assert all(why for why in a.left_out.values())
        for board in a.boards:
            assert board.match and "NVIDIA" in board.source and set(board.rates) <= set(peaks.PIPES)
        assert "fp32_fma" in a.rates  # every architecture has a sourced FMA pipe


def test_the_rates_agree_with_the_whitepapers_ratios() -> None:
    a100, h100 = peaks.TABLE["8.0"].rates, peaks.TABLE["9.0"].rates
    for kind in ("tensor_fp16", "tensor_tf32", "tensor_int8", "tensor_fp64"):
        assert h100[kind] == 2 * a100[kind]  # Hopper's Tensor Cores: 2x A100 per SM per clock
    for rates in (a100, h100):
        assert rates["tensor_tf32"] * 2 == rates["tensor_fp16"]
        assert rates["tensor_int8"] == 2 * rates["tensor_fp16"]  # IMMA: 2x bf16
        assert rates["fp64_fma"] * 2 == rates["fp32_fma"]
    assert h100["tensor_fp8"] == h100["tensor_int8"]
    # H100 SXM5's FP16/BF16 989.4 TFLOP/s: 132 SMs at 1830 MHz
    assert peaks.peak("9.0", "tensor_fp16", 132, 1830)[0] / 1e12 == pytest.approx(989.4, abs=0.1)


def test_board_rates_and_what_is_left_out() -> None:
    assert peaks.rate("8.6", "tensor_fp16", "NVIDIA A40")[0] == 1024
    assert peaks.rate("8.6", "tensor_fp16", "NVIDIA GeForce RTX 3090")[0] == 512
    assert peaks.rate("8.6", "tensor_fp16", "NVIDIA RTX A400") is None  # not the A40
    assert peaks.rate("10.0", "tensor_int8", "NVIDIA B200") is None
    assert "not sourced" in peaks.missing("10.0", "tensor_int8", "NVIDIA B200")
    assert "measured roofs only" in peaks.missing("7.5", "tensor_fp16")
    assert peaks.rate("7.5", "fp32_fma") is None and peaks.rate(None, "fp32_fma") is None


# --- the roof follows the pipe --------------------------------------------------------------------


def test_cublas_bf16_report_is_judged_on_hmma_by_its_label(ncu_tables) -> None:
    rows = ncu_tables("fx_matmul").kernels.to_dict("records")
    row = next(r for r in rows if str(r["kernel_name"]).startswith("nvjet_sm90_"))
    assert roof_pipe(LaunchRecord.of(row), "bfloat16")[0] == "tensor_fp16"
    clock = row["ncu_sm_clock_mhz"]
    roof = pipe_roof(LaunchRecord.of(row), "bfloat16", Device(int(row["sm_count"]), "9.0"))
    assert roof.kind == "tensor_fp16" and roof.clock_mhz == clock
    assert roof.peak_flops == pytest.approx(row["sm_count"] * 4096 * clock * 1e6)
    assert "H100" in roof.source
    # HMMA with an int8 label names no kind: no roof rather than a guessed one
    assert roof_pipe(LaunchRecord.of(row), "int8")[0] is None


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("matmul-20261201-033940-vm-f75dcf", {"tensor_fp16"}),
        ("matmul_fp8-20261130-185510-vm-ac8f22", {"tensor_fp8"}),
        ("softmax-20261201-002228-vm-a879b0", {"fp32_fma"}),  # HFMA2.MMA moves: not MMA math
        ("suite_matmul-20261130-163624-vm-7ab7", {"tensor_fp16", "tensor_tf32", "fp32_fma"}),
    ],
)
def test_stored_runs_are_judged_on_the_pipe_they_ran_on(run: str, expected: set[str]) -> None:
    r = store.load(run_path(run))
    device = Device.of(r.manifest)
    kinds = set()
    for row in r.cases.to_dict("records"):
        roof = pipe_roof(LaunchRecord.of(row), row["dtype"], device)
        kinds.add(roof.kind)
        assert roof.peak_flops and roof.clock_mhz == row["sm_clock_mhz"]
        per_sm = peaks.TABLE["9.0"].rates[roof.kind]
        assert roof.peak_flops == pytest.approx(132 * per_sm * row["sm_clock_mhz"] * 1e6)
    assert kinds == expected


def test_an_int8_gemm_labelled_float32_is_judged_against_the_int8_roof() -> None:
    # the issue's case: IMMA busy under a float32 label was judged against TF32
    imma = {"tensor_any_pct": 81.0, "tensor_pipe_pct": 0.4, "tensor_imma_pct": 80.6}
    f = one_case(dtype="float32", **COMPUTE, **GEMM, **imma, fma_pipe_pct=6.0, sm_clock_mhz=1980.0)
    ev = f.evidence
    assert ev["roof_pipe"] == "tensor_int8"
    assert ev["pipe_roof_tflops"] == pytest.approx(SM_COUNT * 8192 * 1980e6 / 1e12)
    tf32 = SM_COUNT * 2048 * 1980e6 / 1e12
    assert ev["pct_of_pipe_roof_pct"] == pytest.approx(ev["achieved_tflops"] / tf32 * 100 / 4)
    assert "pct_of_measured_matmul_pct" not in ev  # the measured matmul is bf16 on HMMA


def test_the_mma_kind_from_instruction_counts_where_no_sub_pipe_share_was_captured() -> None:
    base = {"tensor_any_pct": 60.0, "fma_pipe_pct": 5.0}
    int8 = {**base, "imma_inst": 9e6, "hmma_inst": 0.0, "gmma_inst": 1e3}
    assert roof_pipe(LaunchRecord.of(int8), "float16")[0] == "tensor_int8"
    hopper = {**base, "imma_inst": 0.0, "hmma_inst": 0.0, "gmma_inst": 4e6}
    assert roof_pipe(LaunchRecord.of(hopper), "float16")[0] == "tensor_fp16"
    # neither share nor count: the label stands in, as before
    assert roof_pipe(LaunchRecord.of(base), "float32")[0] == "tensor_tf32"


def test_dmma_and_the_fp64_pipe() -> None:
    dmma = {"tensor_any_pct": 70.0, "tensor_pipe_pct": 0.0, "tensor_dmma_pct": 69.0}
    assert roof_pipe(LaunchRecord.of({**dmma, "fma_pipe_pct": 3.0}), "float64")[0] == "tensor_fp64"
    # an FP64 FMA chain under a float32 label: the FP64 pipe does the work
    chain = {"tensor_any_pct": 0.0, "fp64_pipe_pct": 99.0, "fma_pipe_pct": 4.0}
    assert roof_pipe(LaunchRecord.of(chain), "float32")[0] == "fp64_fma"
    # a float64 label whose math never reached the FP64 pipe is judged on the FMA pipe
    assert roof_pipe(LaunchRecord.of({**chain, "fp64_pipe_pct": 0.0}), "float64")[0] == "fp32_fma"
    # no FP64 counter: the label says
    assert roof_pipe(LaunchRecord.of({"tensor_any_pct": 0.0}), "float64")[0] == "fp64_fma"


def test_a_gpu_not_in_the_table_gets_measured_roofs_only_and_says_so() -> None:
    turing = Device(40, "7.5", 320.0, 60.0, "bfloat16", "Tesla T4")
    row = {**GEMM, "tensor_pipe_pct": 90.0, "fma_pipe_pct": 2.0, "sm_clock_mhz": 1590.0}
    roof = pipe_roof(LaunchRecord.of(row), "bfloat16", turing)
    assert roof.kind == "tensor_fp16" and roof.peak_flops == 60e12 and roof.clock_mhz is None
    assert "measured" in roof.source and "7.5" in roof.source
    ev = Evidence()
    compute_roof(LaunchRecord.of(row), "bfloat16", turing, ev)
    assert "pipe_roof_tflops" not in ev and "7.5" in ev["roof_note"]
    assert ev["pct_of_measured_matmul_pct"] == pytest.approx(ev["achieved_tflops"] / 60 * 100)
    assert any("compute roof: " in v and "7.5" in v for _, v in facts(ev))
    # a kind the run measured no ceiling for: no roof, and the note
    fp32 = pipe_roof(
        LaunchRecord.of({**row, "tensor_pipe_pct": 0.0, "fma_pipe_pct": 80.0}), "float32", turing
    )
    assert fp32.kind == "fp32_fma" and fp32.peak_flops is None and "7.5" in fp32.source


def test_explain_takes_the_int8_label() -> None:
    imma = {"tensor_any_pct": 85.0, "tensor_pipe_pct": 0.2, "tensor_imma_pct": 84.0}
    row = case(dtype="int8", **COMPUTE, **GEMM, **imma, fma_pipe_pct=3.0, sm_clock_mhz=1900.0)
    f = next(f for f in explain_run(run_of([row])) if f.kind == FindingKind.CASE)
    assert f.evidence["roof_pipe"] == "tensor_int8" and "int8" in f.subject


# --- the dashboard reads the same table ----------------------------------------------------------


def test_the_dashboard_draws_the_fp8_roof_from_the_shared_table() -> None:
    run = store.load(run_path("matmul_fp8-20261130-185510-vm-ac8f22"))
    found, missing = roofline.roofs(run, "float8_e4m3fn")
    fp8 = next(r for r in found if r.name == "FP8 Tensor Core")
    clock = float(run.manifest["fingerprint"]["clocks_mhz"]["max_sm"])
    assert not fp8.measured and fp8.value == pytest.approx(132 * 8192 * clock * 1e6 / 1e12)
    assert not any("Tensor Core" in m for m in missing)


def test_the_dashboard_adds_the_roof_of_the_pipe_the_cases_ran_on() -> None:
    run = store.load(run_path("suite_matmul-20261130-163624-vm-7ab7"))
    names = [r.name for r in roofline.roofs(run, "float32")[0]]
    assert "INT8 Tensor Core" not in names
    cases = run.cases.copy()
    f32 = cases["dtype"] == "float32"
    cases.loc[f32, "tensor_imma_pct"] = 90.0  # as an int8 GEMM under a float32 label reads
    cases.loc[f32, "tensor_pipe_pct"] = 0.1
    cases.loc[f32, "tensor_any_pct"] = 90.0
    edited = store.Run(run.path, run.manifest, cases)
    assert roofline.measured_pipes(edited, "float32") == ["tensor_int8"]
    int8 = next(r for r in roofline.roofs(edited, "float32")[0] if r.name == "INT8 Tensor Core")
    clock = float(run.manifest["fingerprint"]["clocks_mhz"]["max_sm"])
    assert int8.value == pytest.approx(132 * 8192 * clock * 1e6 / 1e12)
    assert "the pipe float32 cases ran on" in int8.source


# --- dtypes beyond the float family ---------------------------------------------------------------


def _int_spec(fn, tolerance: float = 4.0) -> KernelSpec:
    """An int8 dot product per row: int8 inputs, int32 output (constructed for the test)."""

    def make_inputs(shape, dtype, device, gen):
        a = torch.randint(-128, 128, shape, generator=gen, dtype=torch.int8, device=device)
        return {"a": a, "out": torch.full((shape[0],), -1, dtype=torch.int32, device=device)}

    def reference(inputs):
        a = inputs["a"].double()
        return (a * a).sum(dim=1)

    return KernelSpec(
        name="rowdot",
        description="",
        variants=(Variant("v", fn),),
        make_inputs=make_inputs,
        reference=reference,
        dtypes=("int8",),
        shapes=((8, 64),),
        # a float tolerance that an off-by-one would pass: integer outputs ignore it
        tolerances={"int8": (tolerance, 0.0)},
        bytes_moved=lambda shape, itemsize: shape[0] * shape[1] * itemsize,
        flops=lambda shape: 2 * shape[0] * shape[1],
    )


def _rowdot(inputs, delta: int = 0, rows: int | None = None):
    a = inputs["a"].to(torch.int32)
    n = a.shape[0] if rows is None else rows
    inputs["out"][:n] = (a * a).sum(dim=1)[:n] + delta
    return inputs["out"]


def test_integer_outputs_are_checked_exactly() -> None:
    ok = check(_int_spec(_rowdot), _rowdot, (8, 64), "int8", "cpu", seed=3)
    assert ok.correct and ok.max_abs_err == 0 and ok.error == ""
    off = check(_int_spec(_rowdot), lambda i: _rowdot(i, delta=1), (8, 64), "int8", "cpu", 3)
    assert not off.correct and "outside tolerance (exact, integer output): 8 of 8" in off.error
    # an unwritten element keeps the spec's fill (-1, never a sum of squares) and fails
    half = check(_int_spec(_rowdot), lambda i: _rowdot(i, rows=4), (8, 64), "int8", "cpu", 3)
    assert not half.correct and "4 of 8" in half.error


def test_int8_and_e5m2_are_dtype_names() -> None:
    spec = _int_spec(_rowdot)
    assert normalize_dtype(spec, "i8") == normalize_dtype(spec, "INT8") == "int8"
    assert DTYPE_ITEMSIZE["int8"] == DTYPE_ITEMSIZE["float8_e5m2"] == 1
    e5m2 = KernelSpec(**{**spec.__dict__, "dtypes": ("float8_e5m2",)})
    assert normalize_dtype(e5m2, "e5m2") == normalize_dtype(e5m2, "fp8_e5m2") == "float8_e5m2"
    assert peaks.LABEL_TENSOR_PIPE["float8_e5m2"] == "tensor_fp8"
