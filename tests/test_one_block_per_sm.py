"""One large program per SM (catalogue's one_block_per_sm) and the override it takes part in: a
stream ncu calls latency-bound is memory-bound where one program per SM holds, its DRAM line is at
or over its SM line and its FLOP per byte is far under the FMA ridge. On the stored H200 captures:
Liger's cross entropy (the hold-out, 12 launches), the softmax peers (Liger, ATen, Inductor), the
zoo's tail and Liger's fused linear cross entropy."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from stored_runs import explained, run_path

from profkit import store
from profkit.explain import catalogue, explain_run
from profkit.explain.context import Context
from profkit.explain.diagnose import diagnose
from profkit.explain.kernel_family import Family
from profkit.explain.kinds import KernelKind
from profkit.explain.model import Action, Bottleneck, Cause, FindingKind, Unit
from profkit.explain.phrases import advice_text
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import Device

DATA = Path(__file__).parent / "data"
LIGER_CE = DATA / "holdout" / "ho_liger_ce-20261204-161945-vm-7cc4b7"
LIGER_FLCE = DATA / "holdout" / "ho_liger_flce-20261204-162034-vm-996724"
ZOO_TAIL = DATA / "zoo" / "zoo_tail-20261202-011029-vm-fbe673"
SOFTMAX = "softmax-20261202-023732-vm-72bb39"  # peers: Liger, ATen and Inductor's softmax


@cache
def _run(path: Path):
    return store.load(path)


@cache
def _explained(path: Path):
    return explain_run(_run(path), history_runs=[])


def _case(found, variant: str, dtype: str, shape: str):
    (f,) = [f for f in found if f.kind == FindingKind.CASE and f.variant == variant
            and f.dtype == dtype and f.shape == shape]  # fmt: skip
    return f


def _causes(f) -> list[str]:
    return [str(r.cause) for r in f.reasons]


def _liger_ce_launch() -> tuple[LaunchRecord, Context]:
    """The cross-entropy launch (85% of the case's time) with the case's model and timing, and
    the run's device: what run._chain diagnoses."""
    run = _run(LIGER_CE)
    rows = run.kernels.to_dict("records")
    (row,) = [r for r in rows if r["kernel_name"] == "liger_cross_entropy_kernel"]
    case = LaunchRecord.of(run.cases.to_dict("records")[0])
    rec = replace(LaunchRecord.of(row, Family.LIGER), model_bytes=case.model_bytes,
                  model_flops=case.model_flops, device_p50_ms=case.device_p50_ms,
                  copy_gbps_same_size=case.copy_gbps_same_size)  # fmt: skip
    return rec, Context(device=Device.of(run.manifest), dtype="bfloat16")


def test_liger_ce_is_a_dram_stream_of_one_program_per_sm() -> None:
    f = _case(_explained(LIGER_CE), "liger", "bfloat16", "8192x32000")
    assert (f.bottleneck, f.unit) == (Bottleneck.MEMORY, Unit.DRAM)
    assert _causes(f)[1:3] == ["one_block_per_sm", "short_of_roof"]
    ev = f.evidence
    assert ev["sol_bottleneck"] == "latency" and ev["resident_blocks_per_sm"] == 1
    assert ev["flop_per_byte"] < 0.25 * ev["fma_ridge_flop_per_byte"]
    assert ev["dram_throughput_pct"] >= ev["sm_throughput_pct"]
    first = f.next[0]
    assert first.action == Action.LIBRARY_OPTIONS and first.detail["library"] == "liger"
    assert first.detail["launch"] == "liger_cross_entropy_kernel"
    # run._chain: the launch judged with the case's model is memory-bound in the groups too, so
    # the case's words never say "100% in 12 latency-bound launches" beside "memory-bound"
    groups = f.reasons[0].detail["groups"]
    assert groups[0]["bottleneck"] == "memory" and groups[0]["launches"] == 1
    (top,) = [x for x in f.launches if x.name == "liger_cross_entropy_kernel"]
    assert top.bottleneck == Bottleneck.MEMORY


def test_the_record_reads_one_block_from_ncus_limiters_or_theoretical_occupancy() -> None:
    rec, _ = _liger_ce_launch()
    # registers allow 1 block of 1024 threads, warps 2, shared memory 7, blocks 32
    assert rec.occupancy_limit_registers == 1 and rec.resident_blocks_per_sm == 1
    # without the limiters (most stored runs): 50% theoretical of 64 warps over 32 warps a block
    bare = replace(rec, occupancy_limit_registers=None)
    assert bare.theoretical_occupancy_pct == 50.0 and bare.resident_blocks_per_sm == 1.0


def test_it_is_not_found_where_the_grid_memory_or_kind_says_otherwise() -> None:
    # Liger's fused linear CE: the same kernel at 1.9 waves (the grid's shape is read first)
    flce = [x for f in _explained(LIGER_FLCE) for x in (f.launches or [])
            if x.name == "liger_cross_entropy_kernel"]  # fmt: skip
    assert flce and all(x.evidence["waves_per_sm"] < 2 for x in flce)
    assert not any(r.cause == Cause.ONE_BLOCK_PER_SM for x in flce for r in x.reasons)
    # the zoo's tail: one 1024-thread block per SM over 1.0 waves; its tail is the cause
    tail = [f for f in _explained(ZOO_TAIL) if f.kind == FindingKind.CASE]
    assert tail and not any(Cause.ONE_BLOCK_PER_SM in {r.cause for r in f.reasons} for f in tail)
    softmax = explained(SOFTMAX).findings
    # Liger's fp32 softmax at 1024x32768: one block per SM, but DRAM at 74% is over the latency
    # line (bandwidth, not loads in flight)
    busy = _case(softmax, "liger", "float32", "1024x32768")
    assert busy.evidence["memory_throughput_pct"] >= 60 and "one_block_per_sm" not in _causes(busy)
    # ATen's fp16 softmax at 16384x8192: one block per SM, compute-bound by SOL (SM 62%): the SM
    # busy on its own work is not judged for it at all
    compute = _case(softmax, "torch", "float16", "16384x8192")
    assert compute.bottleneck == Bottleneck.COMPUTE
    assert "one_block_per_sm" not in _causes(compute) + compute.not_measured
    # a matrix product holds one large tile per SM by design: the kind is not judged
    rec, _ = _liger_ce_launch()
    gemm = replace(rec, name="nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coop", family=Family.CUBLAS,
                   bottleneck=Bottleneck.LATENCY)  # fmt: skip
    assert gemm.kind == KernelKind.GEMM and not catalogue.holds(gemm, Cause.ONE_BLOCK_PER_SM)
    outcomes = catalogue.evaluate(gemm)
    assert Cause.ONE_BLOCK_PER_SM not in {o.entry.cause for o in outcomes}


def test_it_refutes_the_stall_and_memory_latency_it_explains() -> None:
    # Liger's fp16 softmax at 1024x32768 was "memory_latency" (long scoreboard dominant, memory
    # at 51%): the one program per SM is why too few loads are in flight
    f = _case(explained(SOFTMAX).findings, "liger", "float16", "1024x32768")
    assert _causes(f)[0] == "one_block_per_sm" and (f.bottleneck, f.unit) == ("memory", "dram")
    assert "memory_latency" not in _causes(f) and "stall" not in _causes(f)
    entry = next(e for e in catalogue.CATALOGUE if e.cause == Cause.ONE_BLOCK_PER_SM)
    assert entry.refutes == {Cause.STALL, Cause.MEMORY_LATENCY}
    # its launch as ncu reads it (latency): memory latency is found by its own test, then refuted
    run = store.load(run_path(SOFTMAX))
    (row,) = [r for r in run.kernels.to_dict("records")
              if r["case"] == "softmax.liger.float16.1024x32768"]  # fmt: skip
    rec = replace(LaunchRecord.of(row, Family.LIGER), bottleneck=Bottleneck.LATENCY)
    outcomes = catalogue.evaluate(rec)
    assert catalogue.found(outcomes, Cause.MEMORY_LATENCY) is not None
    assert catalogue.found(outcomes, Cause.ONE_BLOCK_PER_SM) is not None
    assert {Cause.STALL, Cause.MEMORY_LATENCY} <= outcomes.refuted


def test_its_remedy_follows_the_owner_never_fuse_for_library_code() -> None:
    softmax = explained(SOFTMAX).findings
    # ATen's softmax: library options or another backend, not "fuse it away" (its internals are
    # not what fusing changes) and never tile advice
    aten = _case(softmax, "torch", "float32", "16384x8192")
    assert _causes(aten) == ["one_block_per_sm"] and aten.evidence["family"] == "aten_norm"
    assert [s.action for s in aten.next] == [Action.LIBRARY_OPTIONS]
    assert aten.next[0].detail["library"] == "aten_norm"
    assert "aten norm library code" in advice_text(aten.next[0])
    # Inductor's generated softmax: the compiler's options first
    inductor = _case(softmax, "compile", "float32", "1024x32768")
    assert _causes(inductor)[0] == "one_block_per_sm"
    assert inductor.next[0].action == Action.COMPILER_OPTIONS
    # the user's own Triton: smaller programs, several resident per SM
    rec, ctx = _liger_ce_launch()
    user = diagnose(replace(rec, family=Family.TRITON), ctx)
    assert user.reasons[0].cause == Cause.ONE_BLOCK_PER_SM
    assert user.steps[0].action == Action.MORE_PROGRAMS and user.steps[0].detail["one_block"]
    assert "num_warps" in advice_text(user.steps[0])


def test_the_override_needs_each_of_its_conditions() -> None:
    rec, ctx = _liger_ce_launch()
    found = diagnose(rec, ctx)
    assert found.bottleneck == Bottleneck.MEMORY
    ridge = found.evidence["fma_ridge_flop_per_byte"]
    broken = {
        # the SM line over the DRAM line
        "sm over dram": replace(rec, sm_pct=rec.dram_pct + 1),
        # a quarter of the ridge or more: the pipes may be the bound
        "dense": replace(rec, model_flops=0.26 * ridge * rec.model_bytes),
        # two blocks per SM: another program's loads overlap
        "two blocks": replace(rec, occupancy_limit_registers=2.0, occupancy_limit_warps=2.0),
        # no model: no FLOP per byte to read
        "no model": replace(rec, model_flops=None),
    }
    for why, other in broken.items():
        assert diagnose(other, ctx).bottleneck == Bottleneck.LATENCY, why
    # no device copy: no ridge
    bare = replace(ctx, device=replace(ctx.device, copy_gbps=None))
    assert diagnose(rec, bare).bottleneck == Bottleneck.LATENCY


def test_data_in_l2_needs_stores_that_could_have_stayed_in_l2() -> None:
    # Liger's CE: DRAM 527 MB against a 1.0 GB model that writes the gradient, yet 262 KB stored:
    # no write left in L2 accounts for the 521 MB missing, so no "data in L2" false alarm
    f = _case(_explained(LIGER_CE), "liger", "bfloat16", "8192x32000")
    assert "data_in_l2" not in _causes(f)
    rec, _ = _liger_ce_launch()
    assert rec.model_bytes - rec.dram_bytes > 1000 * rec.global_st_sectors * 32
    assert catalogue.found(catalogue.evaluate(rec), Cause.DATA_IN_L2) is None
    # without the store counter the old reading stands (it cannot be refuted)
    unknown = catalogue.evaluate(replace(rec, global_st_sectors=None))
    assert catalogue.found(unknown, Cause.DATA_IN_L2) is not None
    # Liger's softmax stores its output: the writes still in L2 account for the shortfall
    kept = _case(explained(SOFTMAX).findings, "liger", "float16", "1024x32768")
    assert "data_in_l2" in _causes(kept)
