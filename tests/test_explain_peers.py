"""explain against a peer library's kernel (Liger-Kernel 0.8.5's softmax), on the H200 capture
that compared it with the lab's softmax before the lab's fix (session 9, tests/data/peers/).

Where the faster peer shares a case's launch, bytes and dominant stall, explain must not offer that
stall's remedy as the way to close the gap; and no step may claim more time than the higher of a
case's two floors (its bytes at the copy's rate, its work at the pipe's peak) leaves.
"""

from __future__ import annotations

from functools import cache

import pytest
from stored_runs import run_path

from profkit import store
from profkit.explain import Action, Cause, FindingKind, explain_run
from profkit.explain.phrases import advice_text
from profkit.explain.record import LaunchRecord
from profkit.explain.siblings import _FACTS

RUN = "softmax-20261202-022225-vm-2ee1ba"


@cache
def report():
    return explain_run(store.load(run_path(RUN)))


@cache
def cases():
    return store.load(run_path(RUN)).cases


def finding(variant: str, dtype: str, shape: str):
    subject = f"softmax {variant} {dtype} {shape}"
    (f,) = [f for f in report() if f.kind == FindingKind.CASE and f.subject == subject]
    return f


def row(variant: str, dtype: str, shape: str):
    df = cases()
    return df[(df.variant == variant) & (df["dtype"] == dtype) & (df["shape"] == shape)].iloc[0]


def test_a_stall_the_faster_peer_shares_gives_way_to_what_differs():
    # fp16 16384x8192: same launch and DRAM bytes as Liger, long scoreboard the top stall in both
    mine, theirs = row("triton", "float16", "16384x8192"), row("liger", "float16", "16384x8192")
    assert theirs.device_p50_ms < mine.device_p50_ms
    share = LaunchRecord.of(mine.to_dict()).captured_stall_share("long_scoreboard")
    theirs_share = LaunchRecord.of(theirs.to_dict()).captured_stall_share("long_scoreboard")
    assert theirs_share >= share - 0.05
    f = finding("triton", "float16", "16384x8192")
    actions = [s.action for s in f.next]
    assert Action.HIDE_LATENCY not in actions
    (step,) = [s for s in f.next if s.action == Action.MATCH_SIBLING]
    assert step.detail["sibling"] == "liger" and step.detail["differs"] == []
    # every launch and traffic fact both rows hold was compared, and all are alike
    assert step.detail["compared"] == [
        c for c, _ in _FACTS if pd_has(mine, c) and pd_has(theirs, c)
    ]
    assert "compare the two kernels' SASS" in advice_text(step)
    (stall,) = [r for r in f.reasons if r.cause == Cause.STALL]
    assert stall.detail["shared_with"] == "liger"


def test_at_the_copy_line_a_faster_peer_with_the_same_launch_is_said_to_differ_in_code():
    # fp32 16384x8192 is at the copy line, Liger faster on the same launch and bytes
    f = finding("triton", "float32", "16384x8192")
    (step,) = [s for s in f.next if s.action == Action.MATCH_SIBLING]
    assert step.detail["differs"] == [] and "grid_size" in step.detail["compared"]


@pytest.mark.parametrize("variant", ["triton", "liger", "torch"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape", ["4096x4096", "16384x8192", "4096x16384", "1024x32768"])
def test_no_step_claims_more_than_the_higher_floor_leaves(variant, dtype, shape):
    f = finding(variant, dtype, shape)
    ms = row(variant, dtype, shape).device_p50_ms
    ev = f.evidence
    floors = [ev[k] for k in ("pct_of_same_size_copy_pct", "pct_of_pipe_roof_pct") if k in ev]
    sibling = max(
        (ms - row(v, dtype, shape).device_p50_ms for v in ("triton", "liger", "torch")), default=0
    )
    bound = max(ms * 1e3 * (1 - min(max(floors), 100) / 100) if floors else 0, sibling * 1e3)
    for s in f.next:
        if s.detail.get("gain_us") is not None:
            assert s.detail["gain_us"] <= bound + 1e-6


def test_a_near_copy_case_called_compute_bound_is_not_told_it_has_most_of_its_time_to_gain():
    # fp16 4096x4096: ncu's SOL says compute (LSU), yet the case runs at ~95% of a same-size copy:
    # at most ~1 us to gain, under the practical floor, so no latency step is offered
    f = finding("triton", "float16", "4096x4096")
    assert f.evidence["pct_of_same_size_copy_pct"] > 90
    assert Action.HIDE_LATENCY not in [s.action for s in f.next]
    assert any(r["action"] == str(Action.HIDE_LATENCY) for r in f.ruled_out)


def pd_has(r, col: str) -> bool:
    return col in r and r[col] == r[col]


FIRST_ADD_RMSNORM = "add_rmsnorm-20261202-025440-vm-59ff1b"  # its first design, pass 2 re-read h


def test_a_faster_peer_asking_for_fewer_load_bytes_is_named_beside_the_cause() -> None:
    # bf16 16384x8192: the lab re-reads h from L2 in pass 2 (an L2-reuse cause with its own step)
    # while Liger, measurably faster on the same DRAM bytes, keeps the row in registers
    run = store.load(run_path(FIRST_ADD_RMSNORM))
    df = run.cases
    at = (df["dtype"] == "bfloat16") & (df["shape"] == "16384x8192")
    lab, liger = df[at & (df.variant == "triton")].iloc[0], df[at & (df.variant == "liger")].iloc[0]
    assert liger.global_ld_bytes_requested < lab.global_ld_bytes_requested / 1.25
    (f,) = [
        f
        for f in explain_run(run)
        if f.kind == FindingKind.CASE and f.subject == "add_rmsnorm triton bfloat16 16384x8192"
    ]
    assert Cause.L2_REUSE in [r.cause for r in f.reasons]
    first = f.next[0]
    assert first.action == Action.MATCH_SIBLING and first.detail["sibling"] == "liger"
    named = {d["key"]: d for d in first.detail["differs"]}
    assert named["global_ld_bytes_requested"]["sibling"] == liger.global_ld_bytes_requested
    # Liger holds fewer warps (75% theoretical against 100%): not a reason it is faster
    assert "theoretical_occupancy_pct" not in named and "achieved_occupancy_pct" not in named


PEER_RMSNORM = "rmsnorm-20261202-023438-vm-1e156f"  # torch's native RMSNorm beside Liger's


def test_atens_norm_sectors_served_by_l1_are_no_coalescing_loss() -> None:
    # torch's rms_norm runs ATen's vectorized_layer_norm_kernel: 2.0x the ideal sectors, 56-71%
    # of them L1 hits (under 0.9x reach L2), L1 at most 54% busy: not uncoalesced. Where DRAM
    # reads the input again (fp16 4096x8192: 98.9 MB for 67.1 MB), that re-read is said instead
    native = [f for f in explain_run(store.load(run_path(PEER_RMSNORM)))
              if f.kind == FindingKind.CASE and f.variant == "native"]  # fmt: skip
    assert len(native) == 24
    assert not any(r.cause == Cause.UNCOALESCED for f in native for r in f.reasons)
    (big,) = [f for f in native if f.dtype == "float16" and f.shape == "4096x8192"]
    assert Cause.EXTRA_READS in {r.cause for r in big.reasons}
