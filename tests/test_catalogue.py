"""The cause catalogue on a real H200 capture: session 8's probe (tests/fixtures/causes_probe.py
under ncu 2025.3.1 with profkit's metric set; one row per NVTX range and kernel), whose kernels
each carry a known cause or none."""

from __future__ import annotations

import csv
import lzma
from dataclasses import replace
from pathlib import Path

import pytest

from profkit.counters.metrics import METRICS
from profkit.explain import catalogue
from profkit.explain.evidence import Evidence
from profkit.explain.kinds import KernelKind
from profkit.explain.model import Action, Cause, Unit
from profkit.explain.record import LaunchRecord

FIXTURE = Path(__file__).parent / "fixtures" / "causes_probe.csv.xz"


def _rows() -> dict[tuple[str, str], dict]:
    by_name = {m.ncu: m for m in METRICS}
    out = {}
    with lzma.open(FIXTURE, "rt") as fh:
        for raw in csv.DictReader(fh):
            row = {
                by_name[k].column: float(v) * by_name[k].scale
                for k, v in raw.items()
                if k in by_name and v not in ("", "n/a")
            }
            row["kernel_name"] = raw["Kernel Name"]
            out[(raw["range"], raw["Kernel Name"].split("<")[0].split("(")[0])] = row
    return out


ROWS = _rows()


def record(rng: str, name: str | None = None) -> LaunchRecord:
    found = [row for (r, k), row in ROWS.items() if r == rng and (name is None or name in k)]
    assert len(found) == 1, (rng, name, [k for k in ROWS if k[0] == rng])
    return LaunchRecord.of(found[0])


def found(rec: LaunchRecord) -> set[Cause]:
    return {o.entry.cause for o in catalogue.evaluate(rec) if o.status == "found"}


def test_spills_are_local_memory_traffic() -> None:
    spill = record("p.spill")
    assert Cause.REGISTER_SPILLS in found(spill)
    assert spill.local_share > 0.5
    for rng in ("p.add", "p.hist4", "p.gather", "p.softmax"):
        assert Cause.REGISTER_SPILLS not in found(record(rng)), rng


def test_contended_atomics_and_their_spread_twin() -> None:
    hot, spread = record("p.hist4"), record("p.histwide")
    assert Cause.ATOMIC_CONTENTION in found(hot)
    # a million bins keep every L2 slice's atomic unit alike busy: no hot spot
    assert spread.atomic_requests and Cause.ATOMIC_CONTENTION not in found(spread)
    assert (
        catalogue.found(catalogue.evaluate(hot), Cause.ATOMIC_CONTENTION).entry.remedy(hot.kind)
        == Action.PRIVATIZE_ATOMICS
    )


@pytest.mark.parametrize("rng", ["p.add", "p.softmax", "p.exp", "p.dfma"])
def test_vectorized_loads_are_not_uncoalesced(rng: str) -> None:
    # 128-bit loads fetch 16 sectors per request: ideal, whatever a per-request rule says
    rec = record(rng)
    assert rec.ld_sectors_over_ideal == pytest.approx(1.0, abs=0.05)
    assert Cause.UNCOALESCED not in found(rec)


def test_a_gather_is_uncoalesced_and_its_remedy_is_index_locality() -> None:
    gather = record("p.gather")
    assert gather.kind == KernelKind.GATHER
    hit = catalogue.found(catalogue.evaluate(gather), Cause.UNCOALESCED)
    assert hit is not None and hit.evidence["sectors_over_ideal_x"] > 3
    assert hit.entry.remedy(KernelKind.GATHER) == Action.INDEX_LOCALITY
    # a strided transpose is uncoalesced too, but its remedy is the layout
    transpose = record("p.transpose")
    assert transpose.kind == KernelKind.ELEMENTWISE
    assert Cause.UNCOALESCED in found(transpose)


def test_the_tensor_pipe_kind_comes_from_the_instructions() -> None:
    assert record("p.imma", "cutlass").mma_kind == "imma"
    assert record("p.hmma").mma_kind == "hmma"
    for rng in ("p.add", "p.softmax", "p.spill", "p.diverge"):
        assert record(rng).mma_kind is None, rng
    assert record("p.hmma").kind == KernelKind.GEMM
    assert record("p.exp").kind == KernelKind.ELEMENTWISE


def test_a_row_without_the_counters_is_not_measured_never_guessed() -> None:
    bare = LaunchRecord.of({"dram_throughput_pct": 50.0, "sm_throughput_pct": 20.0})
    outcomes = catalogue.evaluate(bare)
    # the one counter it has judges where DRAM stands to its peak: short of it, nothing else
    assert [o.cause for o in outcomes if o.status == "found"] == [Cause.SHORT_OF_ROOF]
    missing = outcomes.not_measured
    for cause in ("register_spills", "atomic_contention", "uncoalesced", "branch_divergence"):
        assert cause in missing


def test_every_entry_says_what_refutes_it_and_has_a_remedy() -> None:
    for entry in catalogue.CATALOGUE:
        assert entry.needs and entry.refuted_by
        for name in entry.needs:
            assert hasattr(LaunchRecord(), name), name
        # a remedy for every kind, or a declared None: a caveat (data left in L2) is no limit; or
        # steps its test chooses by the evidence (Found.steps: the dominant stall's reason, a
        # chain's graphs and fusing, a grid's launch cost or more programs, the copy roof's)
        if not entry.remedies:
            assert entry.cause in {Cause.STALL, Cause.LAUNCH_OVERHEAD, Cause.SMALL_GRID,
                                   Cause.AT_ROOF}  # fmt: skip
            continue
        assert KernelKind.ANY in entry.remedies
        assert entry.remedy(KernelKind.ELEMENTWISE) is not None or entry.cause == Cause.DATA_IN_L2


def test_an_fp64_elementwise_chain_gets_cheaper_math_not_gemm_advice() -> None:
    chain = LaunchRecord.of({"fp64_pipe_pct": 99.0, "fma_pipe_pct": 2.0, "shape": "16777216",
                             "flops": 2.0 * 64 * 16777216, "bytes": 16.0 * 16777216})  # fmt: skip
    assert chain.kind == KernelKind.ELEMENTWISE
    hit = catalogue.found(catalogue.evaluate(chain), Cause.PIPE_BUSY)
    assert hit is not None and str(hit.entry.unit) == "fp64"
    assert hit.entry.remedy(KernelKind.ELEMENTWISE) == Action.CHEAPER_MATH


def test_entries_await_their_counters_as_not_measured() -> None:
    # the occupancy limiters (launch__occupancy_limit_*) are not in the stored captures: every
    # row says "not measured" for shared memory's limit, never guesses it; the weight casts'
    # entry applies to copies only, so only a copy awaits its counter
    outcomes = catalogue.evaluate(record("p.add"))
    missing = outcomes.not_measured
    assert "shared_limits_occupancy" in missing and "weight_casts" not in missing
    copy = replace(record("p.add"), op="aten::copy_")
    assert "weight_casts" in catalogue.evaluate(copy).not_measured


def test_shared_memory_as_the_tightest_limiter() -> None:
    rec = LaunchRecord(occupancy_limit_shared_mem=1, occupancy_limit_registers=2,
                       occupancy_limit_warps=4, occupancy_limit_blocks=32,
                       theoretical_occupancy_pct=12.5, shared_mem_bytes=180_000)  # fmt: skip
    hit = catalogue.found(catalogue.evaluate(rec), Cause.SHARED_LIMITS_OCCUPANCY)
    assert hit is not None and hit.entry.remedy(KernelKind.GEMM) == Action.LESS_SHARED
    assert Cause.LOW_THEORETICAL_OCCUPANCY in hit.entry.refutes
    # registers as tight: not shared memory's doing
    tied = replace(rec, occupancy_limit_registers=1)
    assert catalogue.found(catalogue.evaluate(tied), Cause.SHARED_LIMITS_OCCUPANCY) is None


def test_membar_stalls_beside_atomics_point_at_relax_atomics() -> None:
    rec = LaunchRecord(global_atom_requests=1e6, stalls={"membar": 60.0, "long_scoreboard": 20.0})
    hit = catalogue.found(catalogue.evaluate(rec), Cause.ATOMIC_ORDERING)
    assert hit is not None and hit.evidence["membar_stall_share_pct"] == 75.0
    assert hit.entry.remedy(KernelKind.SCATTER_ATOMIC) == Action.RELAX_ATOMICS
    # the same stalls with no atomics: a fence of another kind
    plain = replace(rec, global_atom_requests=0.0)
    assert catalogue.found(catalogue.evaluate(plain), Cause.ATOMIC_ORDERING) is None
    # no stall counters at all: not measured
    assert "atomic_ordering" in catalogue.evaluate(replace(rec, stalls={})).not_measured


def test_occupancy_and_tail_entries_read_the_record_alone() -> None:
    # the shape causes are entries now: the device's SM count is on the record
    tail = LaunchRecord(waves_per_sm=1.2, grid_size=1000, sm_count=132.0)
    assert catalogue.found(catalogue.evaluate(tail), Cause.TAIL).evidence["tail_idle_pct"] == 40.0
    low = LaunchRecord(achieved_occupancy_pct=10.0, theoretical_occupancy_pct=50.0,
                       waves_per_sm=4.0, grid_size=528, sm_count=132.0)  # fmt: skip
    assert catalogue.found(catalogue.evaluate(low), Cause.LOW_OCCUPANCY) is not None
    # under one wave the grid caps achieved occupancy: the small grid says so, not this entry
    under = replace(low, waves_per_sm=0.5, grid_size=66)
    assert catalogue.found(catalogue.evaluate(under), Cause.LOW_OCCUPANCY) is None
    theory = replace(low, achieved_occupancy_pct=11.0, theoretical_occupancy_pct=12.5)
    hit = catalogue.found(catalogue.evaluate(theory), Cause.LOW_THEORETICAL_OCCUPANCY)
    # a matrix product's one large tile per SM: a fact, no step; another kernel raises it
    assert hit.entry.remedy(KernelKind.GEMM) is None
    assert hit.entry.remedy(KernelKind.NORM) == Action.RAISE_OCCUPANCY


def test_bank_conflicts_that_cost_little_are_a_fact_without_a_step() -> None:
    rec = LaunchRecord(shared_bank_conflicts=4e6, shared_wavefronts=8e6,
                       stalls={"short_scoreboard": 2.0, "long_scoreboard": 40.0})  # fmt: skip
    ev = Evidence()
    reason, steps = catalogue.said(catalogue.evaluate(rec), Cause.BANK_CONFLICTS, rec.kind, ev)
    assert reason.detail == {"minor": True} and steps == []
    assert ev["shared_stall_share_pct"] == pytest.approx(100 * 2 / 42)
    costly = replace(rec, stalls={"short_scoreboard": 30.0, "long_scoreboard": 10.0})
    reason, steps = catalogue.said(catalogue.evaluate(costly), Cause.BANK_CONFLICTS, rec.kind, ev)
    assert not reason.detail and [s.action for s in steps] == [Action.PAD_SHARED]
    # no model: the DRAM-under-model caveat is not measured, never guessed
    assert "data_in_l2" in catalogue.evaluate(rec).not_measured


def test_specific_causes_are_said_in_their_declared_rank() -> None:
    assert [e.cause for e in catalogue.RANKED][:3] == [
        Cause.REGISTER_SPILLS,
        Cause.ATOMIC_CONTENTION,
        Cause.ATOMIC_ORDERING,
    ]
    # spills and contended atomics on one record: the spills first, as ranked
    both = replace(record("p.hist4"), local_ld_bytes=1e9, local_st_bytes=1e9)
    outcomes = catalogue.evaluate(both)
    said = [catalogue.said(outcomes, e.cause, both.kind, Evidence()) for e in catalogue.RANKED]
    said = [s for s in said if s]
    assert [s[0].cause for s in said][:2] == [Cause.REGISTER_SPILLS, Cause.ATOMIC_CONTENTION]


def test_cache_bound_names_the_busier_cache_level() -> None:
    rec = LaunchRecord(dram_pct=30.0, memory_pct=85.0, l1_pct=85.0, l2_pct=60.0)
    ev = Evidence()
    reason, (step,) = catalogue.said(catalogue.evaluate(rec), Cause.CACHE_BOUND, rec.kind, ev)
    assert reason.keys == ["l1_throughput_pct", "dram_throughput_pct"]
    assert reason.detail == step.detail == {"level": "l1"} and step.action == Action.FEWER_BYTES
    assert ev["memory_throughput_pct"] == 85.0  # quoted, not one of the reason's keys
    near = replace(rec, memory_pct=35.0)  # within 10 points of DRAM: DRAM is the level
    assert catalogue.found(catalogue.evaluate(near), Cause.CACHE_BOUND) is None


def test_extra_reads_are_refuted_by_spills_and_then_neither_said_nor_quoted() -> None:
    rec = LaunchRecord(dram_bytes_read=3e9, model_bytes_read=1e9, global_ld_sectors=1e8,
                       local_ld_bytes=0.0, local_st_bytes=0.0)  # fmt: skip
    ev = Evidence()
    reason, (step,) = catalogue.said(catalogue.evaluate(rec), Cause.EXTRA_READS, rec.kind, ev)
    assert reason.keys == ["dram_bytes_read", "model_bytes_read", "dram_read_over_floor_x"]
    assert step.action == Action.REMOVE_EXTRA_READS and ev["dram_read_over_floor_x"] == 3.0
    spilled = replace(rec, local_ld_bytes=4e9, local_st_bytes=4e9)
    ev = Evidence()
    assert catalogue.said(catalogue.evaluate(spilled), Cause.EXTRA_READS, rec.kind, ev) is None
    assert "dram_read_over_floor_x" not in ev
    # no model and no sibling's floor: not measured
    bare = replace(rec, model_bytes_read=None)
    assert "extra_reads" in catalogue.evaluate(bare).not_measured
    floor = replace(bare, read_floor=1.5e9)
    hit = catalogue.found(catalogue.evaluate(floor), Cause.EXTRA_READS)
    assert hit.evidence["fewest_bytes_read"] == 1.5e9


def test_theoretical_occupancy_at_a_quarter_is_low() -> None:
    # 16 warps of 64 are the line itself (thresholds.LOW_THEORETICAL_OCCUPANCY_PCT): the zoo's
    # smem_48k (4 blocks of 48 KB, 25.0%) runs 1.45x slower than its 8 KB twin; rmsnorm v1/v2's
    # 83-register launch (25.0%) is told to raise occupancy, not "neither shape nor occupancy"
    at = LaunchRecord(achieved_occupancy_pct=24.0, theoretical_occupancy_pct=25.0,
                      waves_per_sm=8.0, grid_size=4096, sm_count=132.0)  # fmt: skip
    assert catalogue.found(catalogue.evaluate(at), Cause.LOW_THEORETICAL_OCCUPANCY) is not None
    above = replace(at, theoretical_occupancy_pct=31.25)
    assert catalogue.found(catalogue.evaluate(above), Cause.LOW_THEORETICAL_OCCUPANCY) is None


def test_a_latency_bound_case_takes_its_leading_specific_causes_unit() -> None:
    # SOL names no unit under its latency line: a ranked cause's does (programs too small: the
    # launch; contended atomics: L2, as the zoo's contended histogram; spills: L1), an unranked
    # one's (extra reads) does not
    spills = LaunchRecord(local_ld_bytes=4e6, local_st_bytes=4e6, global_ld_sectors=1e5)
    outcomes = catalogue.evaluate(spills)
    assert catalogue.unit_of(outcomes, Cause.REGISTER_SPILLS) == Unit.L1
    assert catalogue.unit_of(outcomes, Cause.EXTRA_READS) is None


def test_atomics_at_scattered_addresses_are_uncoalesced_not_contended() -> None:
    # the zoo's scatter (H200): 2^20 red requests at random bins, L2 95.5%, atomic units 58.8% busy
    # on every slice (59.2% on the busiest), loads coalesced: uncoalesced atomics -> index locality
    rec = LaunchRecord(global_red_requests=1048576.0, l2_pct=95.5, l2_atomic_busy_pct=58.8,
                       l2_atomic_busy_max_pct=59.2, global_ld_sectors=8388608.0,
                       global_ld_bytes_requested=268435456.0)  # fmt: skip
    outcomes = catalogue.evaluate(rec)
    hit = catalogue.found(outcomes, Cause.UNCOALESCED)
    assert hit is not None and hit.detail == {"atomics": True}
    assert hit.entry.remedy(KernelKind.SCATTER_ATOMIC) == Action.INDEX_LOCALITY
    assert catalogue.found(outcomes, Cause.ATOMIC_CONTENTION) is None
    # L2 under its high-throughput line: the atomics are not what it spends its time on
    assert catalogue.found(catalogue.evaluate(replace(rec, l2_pct=50.0)), Cause.UNCOALESCED) is None


def test_sectors_that_hit_in_l1_are_not_uncoalesced() -> None:
    # ATen's layer norm (bf16 8192x4096, the hold-out's H200 capture): 2.5x the ideal sectors,
    # but 75.6% of them hit in L1 (0.61x the ideal reach L2) while L1 is 54.5% busy, and DRAM
    # reads its 67.9 MB for a 67.1 MB input: no coalescing loss to fix
    kernels = Path(__file__).parent / "data/holdout/ho_layer_norm-20261204-152721-vm-87af1b"
    with (kernels / "kernels.csv").open() as fh:
        row = next(r for r in csv.DictReader(fh) if r["variant"] == "aten")
    norm = LaunchRecord.of({k: v for k, v in row.items() if v != ""})
    assert norm.ld_sectors_over_ideal == pytest.approx(2.5, abs=0.01)
    assert Cause.UNCOALESCED not in found(norm)
    # the same sectors missing L1, or with L1 the busy unit: uncoalesced
    assert Cause.UNCOALESCED in found(replace(norm, l1_hit_pct=0.0))
    assert Cause.UNCOALESCED in found(replace(norm, l1_pct=85.0))
    # a strided transpose's 8x still misses L1 at a third of hits (8 x 0.67 = 5.3x)
    assert Cause.UNCOALESCED in found(replace(record("p.transpose"), l1_hit_pct=33.0))


def test_a_cause_found_by_its_coarser_route_is_not_also_not_measured() -> None:
    # the explain suite's strided copies and torch's transpose (H200, 2026-11-30) were captured
    # before the requested bytes were: their coalescing is judged by the model's bytes (the entry's
    # fallback), found at 4x and more. Until this fallback was the entry's, the finding said
    # "uncoalesced" and listed it as "not measured" beside it; that list changed in these runs only
    from stored_runs import explained

    for run, subject in (
        ("suite_strided-20261130-163645-vm-8ce3", "suite_strided strided float32 16777216"),
        ("suite_strided-20261130-163645-vm-8ce3", "suite_strided torch_strided float32 16777216"),
        ("suite_bank-20261130-163702-vm-c1fd", "suite_bank torch_transpose float32 4096"),
    ):
        (f,) = [f for f in explained(run).findings if f.subject == subject]
        assert Cause.UNCOALESCED in {r.cause for r in f.reasons}
        assert "uncoalesced" not in f.not_measured
    # where the coarser route finds nothing it rules nothing out: still not measured
    rec = LaunchRecord(global_ld_sectors=1e6, model_bytes=32e6)
    assert "uncoalesced" in catalogue.evaluate(rec).not_measured
