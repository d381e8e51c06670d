"""A step answers one cause on one launch: the catalogue's declared conflicts (one test per pair),
library owners' steps, and a multi-launch case's steps bound to the launch they are for."""

from __future__ import annotations

from dataclasses import replace

import pytest
from stored_runs import explained
from test_catalogue import record

from profkit.explain import catalogue
from profkit.explain.context import Context
from profkit.explain.diagnose import diagnose
from profkit.explain.filters import CODE_STEPS, fit_advice
from profkit.explain.kernel_family import LIBRARY, Family
from profkit.explain.kinds import KernelKind
from profkit.explain.model import Action, Advice, Cause, FindingKind, Reason
from profkit.explain.phrases import advice_text
from profkit.explain.record import LaunchRecord

SUM = "sum-20261130-235702-vm-d23604"


def _resolve(
    action: Action, causes: tuple[Cause, ...], rec: LaunchRecord | None = None, **detail: str
):
    reasons = [Reason(c) for c in causes]
    return catalogue.resolve([Advice(action, ["k"], detail)], reasons, rec or LaunchRecord())


def test_larger_tiles_are_withheld_beside_spills() -> None:
    kept, withheld = _resolve(Action.FEED_TENSOR, (Cause.REGISTER_SPILLS,))
    assert kept == [] and withheld == [{"action": "feed_tensor", "why": "spills"}]
    assert _resolve(Action.FEED_TENSOR, (Cause.TENSOR_UNDERFED,))[0]  # alone it stands


def test_larger_tiles_are_withheld_under_one_wave() -> None:
    under = LaunchRecord(waves_per_sm=0.5)
    assert _resolve(Action.FEED_TENSOR, (), under)[1][0]["why"] == "under_one_wave"
    assert _resolve(Action.FEED_TENSOR, (), LaunchRecord(waves_per_sm=3.0))[0]


@pytest.mark.parametrize("action", [Action.HIDE_LATENCY, Action.BYTES_IN_FLIGHT])
def test_hiding_latency_is_withheld_where_programs_are_too_small(action: Action) -> None:
    kept, withheld = _resolve(action, (Cause.SMALL_PROGRAMS,))
    assert kept == [] and withheld[0]["why"] == "small_programs"
    assert _resolve(action, (Cause.MEMORY_LATENCY,))[0]


def test_atomics_are_reduced_before_not_fused_away() -> None:
    kept, _ = _resolve(Action.FUSE, (Cause.ATOMIC_CONTENTION,), library="aten_other")
    assert [s.action for s in kept] == [Action.PRIVATIZE_ATOMICS]
    assert kept[0].detail["instead_of"] == "fuse"
    # a scatter's kind alone: fusing keeps its atomics
    scatter = LaunchRecord(name="_scatter_add_kernel", family=Family.ATEN_OTHER)
    fused = _resolve(Action.FUSE, (), scatter, library="aten_other")[0][0]
    assert fused.action == Action.PRIVATIZE_ATOMICS
    # a chain's "fuse the kernels into one" (launch overhead: a memset and the atomics) stands
    assert _resolve(Action.FUSE, (), scatter)[0][0].action == Action.FUSE


@pytest.mark.parametrize("family", sorted(LIBRARY))
def test_library_code_never_gets_its_own_code_changed(family: Family) -> None:
    # another backend, option or formulation only: no tile, occupancy or pipeline step
    steps = [Advice(a, ["k"]) for a in sorted(CODE_STEPS)]
    kept, _ = fit_advice(steps, family, {})
    assert kept and not {s.action for s in kept} & CODE_STEPS


def test_atens_contended_scatter_is_told_to_reduce_before_its_atomics() -> None:
    # the probe's contended histogram, as ATen's scatter_add_ would run it (library code)
    hot = replace(record("p.hist4"), name="void at::native::_scatter_gather_elementwise_kernel",
                  family=Family.ATEN_OTHER)  # fmt: skip
    found = diagnose(hot, Context())
    assert Cause.ATOMIC_CONTENTION in {r.cause for r in found.reasons}
    actions = [s.action for s in found.steps]
    assert Action.PRIVATIZE_ATOMICS in actions and Action.FUSE not in actions


def test_programs_too_small_refute_imbalance_and_latency() -> None:
    # issue 30's case: 32-thread programs, 2 million blocks, 8.8% achieved against 50%
    tiny = LaunchRecord(name="_tiny_kernel", family=Family.TRITON, memory_pct=20.0, sm_pct=15.0,
                        block_size=32, grid_size=2**21, waves_per_sm=496.5,
                        achieved_occupancy_pct=8.8, theoretical_occupancy_pct=50.0,
                        stalls={"long_scoreboard": 6.0, "wait": 1.0})  # fmt: skip
    hit = catalogue.found(catalogue.evaluate(tiny), Cause.SMALL_PROGRAMS)
    assert hit is not None and hit.evidence["resident_block_cap_pct"] == 50.0
    found = diagnose(tiny, Context())
    causes = {r.cause for r in found.reasons}
    assert Cause.SMALL_PROGRAMS in causes
    assert not causes & {Cause.LOW_OCCUPANCY, Cause.TAIL, Cause.MEMORY_LATENCY}
    assert found.steps[0].action == Action.LARGER_PROGRAMS
    assert Action.HIDE_LATENCY not in {s.action for s in found.steps}
    # a block of 4 warps whose registers cap occupancy: not the resident-block limit
    wide = replace(tiny, block_size=128, theoretical_occupancy_pct=25.0)
    assert catalogue.found(catalogue.evaluate(wide), Cause.SMALL_PROGRAMS) is None


def test_a_memset_before_the_atomics_sets_neither_owner_nor_step() -> None:
    # the Triton atomic sum: an ATen memset (40% of the time at 64K) then the user's kernel
    cases = [
        f
        for f in explained(SUM).findings
        if f.kind == FindingKind.CASE and f.variant == "triton_atomic" and len(f.launches) == 2
    ]
    assert cases
    for f in cases:
        assert f.evidence["family"] == "triton"  # the longest launch's, not the memset's
        for step in f.next:
            launch = step.detail.get("launch")
            share = next((x.share_pct for x in f.launches if x.name == launch), None)
            assert launch is None or share >= 10
        assert not any(s.action == Action.FUSE and s.detail.get("library") for s in f.next)


@pytest.mark.parametrize("name", ["DeviceRadixSortOnesweepKernel", "tensor_kernel_scan_outer_dim"])
def test_a_library_sort_or_scan_is_not_told_to_fuse_away(name: str) -> None:
    rec = LaunchRecord(name=name, family=Family.ATEN_OTHER)
    kept, _ = _resolve(Action.FUSE, (), rec, library="aten_other")
    assert [s.action for s in kept] == [Action.LIBRARY_OPTIONS]
    # an ATen elementwise kernel is still fused away
    plain = LaunchRecord(name="vectorized_elementwise_kernel", family=Family.ATEN_ELEMENTWISE)
    assert _resolve(Action.FUSE, (), plain, library="aten_other")[0][0].action == Action.FUSE


def test_a_library_convolution_or_attention_gets_whole_op_advice_not_gemm_tiles() -> None:
    # CUTLASS's kernels behind aten::cudnn_convolution (the convnet run) and its fmha kernels
    steps = [Advice(Action.FEED_TENSOR, ["k"])]
    # attention's first lever is another backend (issue 30: ho_sdpa's library_options)
    for kind, action in ((KernelKind.CONVOLUTION, Action.LIBRARY_SHAPES),
                         (KernelKind.ATTENTION, Action.LIBRARY_OPTIONS)):  # fmt: skip
        (step,), _ = fit_advice(steps, Family.CUTLASS, {}, kind)
        assert step.action == action and step.detail["whole_op"] == str(kind)
        assert "another backend for the op" in advice_text(step)
    (gemm,), _ = fit_advice(steps, Family.CUTLASS, {}, KernelKind.GEMM)
    assert "whole_op" not in gemm.detail and "batching small GEMMs" in advice_text(gemm)


def test_a_chain_of_library_launches_is_not_told_to_fuse() -> None:
    # catalogue's library_chain: a chain whose launches are all library code gets the library's
    # remedy (another backend, option or formulation); fusing is for chains the user can fuse
    kept, _ = _resolve(Action.FUSE, (), library_chain="cublas")
    assert [s.action for s in kept] == [Action.LIBRARY_OPTIONS]
    assert "nothing of the user's to fuse" in advice_text(kept[0])
    assert _resolve(Action.FUSE, ())[0][0].action == Action.FUSE  # an unmarked chain's stands
    # stored: torch.sum's two ATen reduce launches (2^30 elements) are the library's; the user's
    # Triton chains (tree, and atomics after ATen's memset) are still told to fuse
    chains = [f for f in explained(SUM).findings if f.kind == FindingKind.CASE and f.launches]
    chains = [f for f in chains if len(f.launches) > 1]
    library = [f for f in chains if f.variant == "torch"]
    assert library and all(
        Action.FUSE not in {s.action for s in f.next}
        and any(s.detail.get("library_chain") for s in f.next)
        for f in library
    )
    assert any(Action.FUSE in {s.action for s in f.next} for f in chains if f.variant != "torch")
