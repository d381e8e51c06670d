"""The kernel kind and owner, decided once per launch (profkit.explain.kinds), on stored H200 rows
where the eight rules it replaced disagreed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from stored_runs import run_path

from profkit import store
from profkit.explain.kernel_family import Family, family, launch_family, short_name
from profkit.explain.kinds import KernelKind, Owner, kernel_kind, operand_dtype
from profkit.explain.model import Action, Bottleneck, Cause, Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import roof_pipe
from profkit.explain.run import explain_launches

DECODE = "decode-20261201-002601-vm-da36a7"
RMSNORM_V2 = "rmsnorm-20261130-014917-vm-4bc5"


def _records(run_id: str, lab: bool = False) -> list[LaunchRecord]:
    rows = pd.read_csv(store.table_file(run_path(run_id), store.KERNELS)).to_dict("records")
    return [LaunchRecord.of(r, launch_family(r, lab)) for r in rows]


def _named(records: list[LaunchRecord], base: str) -> list[LaunchRecord]:
    return [r for r in records if short_name(r.name or "", 200) == base]


def test_a_cublas_gemv_issues_mmas_below_ten_percent_busy() -> None:
    # M = 8 decode GEMVs keep the Tensor pipe 2-6% busy, out-working the FMA pipe: MMAs (once
    # "on the Tensor Cores" for the roof but "no MMAs" for the advice)
    gemvs = _named(_records(DECODE), "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT")
    assert gemvs
    for rec in gemvs:
        assert rec.tensor_pct < 10 and rec.mma_kind == "hmma"
        assert rec.kind == KernelKind.GEMM and rec.owner == Owner.LIBRARY and rec.matrix


def test_cublas_split_k_reduce_is_a_reduction_not_a_gemm() -> None:
    for rec in _named(_records(DECODE), "splitKreduce_kernel"):
        assert rec.family == Family.CUBLAS and rec.kind == KernelKind.REDUCTION
        assert rec.mma_kind is None and not rec.matrix and rec.owner == Owner.LIBRARY


def test_aten_elementwise_with_no_fma_counter_is_not_on_the_tensor_roof() -> None:
    # run 4bc5 captured no FMA pipe: ptxas's HFMA2.MMA constant moves read up to 5.6% on the
    # tensor pipe; judged once on the Tensor roof (with a "% of the measured matmul" line)
    moves = _named(_records(RMSNORM_V2), "elementwise_kernel")
    assert max(r.tensor_pct for r in moves) > 5 and all(r.fma_pipe_pct is None for r in moves)
    for rec in moves:
        assert rec.mma_kind is None and rec.kind == KernelKind.ELEMENTWISE
        assert not roof_pipe(rec, "float16")[0].startswith("tensor")


@pytest.mark.parametrize(
    ("name", "family", "op", "kind"),
    [
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", Family.CUDNN, None,
         KernelKind.ATTENTION),
        ("sm90_xmma_dgrad_implicit_gemm_bf16_kernel__5x_cudnn", Family.CUDNN, None,
         KernelKind.CONVOLUTION),
        ("void cutlass::Kernel2<x>(x)", Family.CUTLASS, "aten::cudnn_convolution",
         KernelKind.CONVOLUTION),
        ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0", Family.INDUCTOR, None,
         KernelKind.REDUCTION),
        ("void at::native::unrolled_elementwise_kernel<direct_copy>(x)", Family.ATEN_ELEMENTWISE,
         "aten::copy_", KernelKind.COPY),
        ("_hist_contended_kernel", Family.TRITON, None, KernelKind.SCATTER_ATOMIC),
        ("void at::native::_scatter_gather_elementwise_kernel<x>(x)", Family.ATEN_OTHER, None,
         KernelKind.SCATTER_ATOMIC),
        ("void at::native::index_elementwise_kernel<x>(x)", Family.ATEN_OTHER, None,
         KernelKind.GATHER),
        ("reduce_kernel", Family.ATEN_REDUCE, None, KernelKind.REDUCTION),
        ("cunn_SoftMaxForward", Family.ATEN_NORM, None, KernelKind.NORM),
        ("_add_kernel", Family.TRITON, None, KernelKind.ELEMENTWISE),
    ],
)  # fmt: skip
def test_one_rule_names_the_kind(name: str, family: Family, op: str | None, kind: KernelKind):
    assert kernel_kind(name, family, mma=False, matmul_model=False, op=op) == kind


def test_mmas_or_a_matmul_model_make_a_user_kernel_a_gemm() -> None:
    assert kernel_kind("_kernel", Family.TRITON, mma=True, matmul_model=False) == KernelKind.GEMM
    assert kernel_kind("_kernel", Family.TRITON, mma=False, matmul_model=True) == KernelKind.GEMM


def _raw_report(run_id: str, name_part: str) -> pd.DataFrame:
    """Stored launches as a bare .ncu-rep reads: no case, kernel, variant, dtype or shape."""
    rows = pd.read_csv(store.table_file(run_path(run_id), store.KERNELS))
    rows = rows[rows["kernel_name"].str.contains(name_part, regex=False)].head(1).copy()
    for col in ("case", "kernel", "variant", "dtype", "shape", "nvtx_range"):
        rows[col] = ""
    return rows


def test_a_raw_fp32_cublas_report_is_told_tf32() -> None:
    # the H200's fp32 cuBLAS SIMT GEMM (suite_matmul, sm80_xmma_gemm_f32f32...), no spec
    (f,) = explain_launches(_raw_report("suite_matmul-20261130-163624-vm-7ab7", "f32f32"), None)
    assert f.evidence["kernel_kind"] == "gemm"
    assert (f.evidence["operand_dtype"], f.evidence["operand_dtype_from"]) == (
        "float32",
        "kernel name",
    )
    assert Cause.FP32_GEMM_ON_FMA in {r.cause for r in f.reasons}
    assert f.next[0].action == Action.USE_TF32


def test_a_raw_nvjet_report_reads_its_operands_off_the_name() -> None:
    (f,) = explain_launches(_raw_report("matmul-20261201-033940-vm-f75dcf", "nvjet_sm90_tst"), None)
    assert f.evidence["operand_dtype"] == "bfloat16" and f.evidence["kernel_kind"] == "gemm"


def test_an_unnamed_simt_gemm_is_fp32_by_its_fma_pipe() -> None:
    simt = LaunchRecord(name="void cutlass::Kernel2<x>(x)", family=Family.CUTLASS,
                        fma_pipe_pct=70.0, fp64_pipe_pct=0.0, tensor_any_pct=0.0)  # fmt: skip
    assert operand_dtype(simt) == ("float32", "FMA pipe")
    dgemm = replace(simt, fma_pipe_pct=1.0, fp64_pipe_pct=80.0)
    assert operand_dtype(dgemm) == (None, "")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("_scatter_gather_elementwise_kernel", None),  # by its atomics, below
        ("indexFuncLargeIndex", KernelKind.SCATTER_ATOMIC),
        ("tensor_kernel_scan_innermost_dim", KernelKind.SCAN),
        ("DeviceRadixSortOnesweepKernel", KernelKind.SORT),
        ("gatherTopK", KernelKind.SORT),
    ],
)
def test_atens_scatters_scans_and_sorts_stay_library_code_in_a_lab_variant(name, kind) -> None:
    fam = launch_family({"kernel_name": name}, lab=True)
    rec = LaunchRecord(name=name, family=fam)
    assert fam == Family.ATEN_OTHER and rec.owner == Owner.LIBRARY
    if kind is not None:
        assert rec.kind == kind
    else:  # ATen runs scatter_ and gather on one kernel: its atomics tell which
        assert replace(rec, global_red_requests=1e6).kind == KernelKind.SCATTER_ATOMIC
        assert replace(rec, global_red_requests=0.0).kind == KernelKind.GATHER
    # a user's kernel named like one is still the user's
    assert launch_family({"kernel_name": "_my_scan_kernel"}, lab=True) == Family.TRITON


@pytest.mark.parametrize(
    ("name", "owner"),
    [
        ("flash_fwd_kernel", Owner.LIBRARY),  # PyTorch's flash backend, called by a lab variant
        ("flash_fwd_splitkv_kernel", Owner.LIBRARY),
        ("attention_kernel_batched_impl", Owner.LIBRARY),  # its memory-efficient backend
        ("flash_attn_fwd", Owner.USER),  # a user's Triton kernel, named alike: its code
        ("_attn_fwd", Owner.USER),
    ],
)
def test_pytorch_attention_in_a_lab_variant_is_library_code(name: str, owner: Owner) -> None:
    rec = LaunchRecord(name=name, family=launch_family({"kernel_name": name}, lab=True))
    assert rec.owner == owner and rec.kind == KernelKind.ATTENTION


@pytest.mark.parametrize("name", ["_kldiv_kernel_forward", "_group_norm_forward_kernel",
                                  "_jsd_kernel", "element_mul_kernel"])  # fmt: skip
def test_ligers_other_ops_are_liger_code_as_a_baseline_or_in_a_report(name: str) -> None:
    assert family(name) == Family.LIGER == launch_family({"kernel_name": name}, lab=False)
    assert LaunchRecord(name=name, family=Family.LIGER).owner == Owner.LIBRARY


def _holdout_record(run_id: str, variant: str):
    from profkit import store
    from profkit.explain.context import Context
    from profkit.explain.roofs import Device

    run = store.load(Path(__file__).parent / "data" / "holdout" / run_id)
    row = next(r for r in run.cases.to_dict("records") if r["variant"] == variant)
    krow = next(r for r in run.kernels.to_dict("records") if r["case"] == row["case"])
    rec = LaunchRecord.of({**row, "kernel_name": krow["kernel_name"]}, launch_family(krow, True))
    return rec, Context(device=Device.of(run.manifest), dtype=str(row["dtype"]))


def test_an_issue_heavy_launch_waiting_on_memory_is_memory_bound() -> None:
    # ATen's layer norm (H200): SOL's SM line 73% from issue, no pipe over 41%, long scoreboard
    # 56% of the stalls: the time goes to memory (holdout/EXPECTED; the rmsnorm runs' eager chain
    # kernels read alike since issue 30)
    from profkit.explain.diagnose import diagnose

    rec, ctx = _holdout_record("ho_layer_norm-20261204-152721-vm-87af1b", "aten")
    found = diagnose(rec, ctx)
    assert (found.bottleneck, found.unit) == (Bottleneck.MEMORY, Unit.DRAM)
    assert found.evidence["sol_bottleneck"] == "compute"
    # the same launch with its ALU pipe at its busy line: compute, as SOL says
    busy = replace(rec, alu_pipe_pct=85.0)
    assert diagnose(busy, ctx).bottleneck == Bottleneck.COMPUTE


def test_a_same_size_copy_measured_faster_than_the_large_copy_is_not_the_roof() -> None:
    # zoo_tiny_programs large (H200): 94.76% of its same-size copy, 95.05% of the large copy; the
    # same-size copy measured faster than the large one, which amortizes every fixed cost: noise
    rec = LaunchRecord(model_bytes=4e8, device_p50_ms=0.1, copy_gbps_same_size=4200.0)
    assert replace(rec, copy_gbps=4100.0).copy_roof[1] == pytest.approx(4000 / 41)
    assert replace(rec, copy_gbps=4300.0).copy_roof[1] == pytest.approx(4000 / 42)
