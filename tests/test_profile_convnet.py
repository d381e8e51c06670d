"""`profkit profile --source` on a program nobody here wrote explain for: a small conv net trained
under torch.compile on the H200 (bf16 autocast, channels-last; 8 steps, the last 3 measured; the
probe script and job are in history at commit f983ed7, jobs/probe_s10). Its kernels:
cuDNN's convolutions (one family named only mangled by torch.profiler), ATen's batch norm and
Inductor's generated Triton. Tables only, from tests/data/workloads/."""

from __future__ import annotations

from pathlib import Path

import pytest

from profkit import store
from profkit.explain import Action, Cause
from profkit.explain.kernel_family import Family, family
from profkit.explain.phrases import advice_text, reason_text
from profkit.workload.explain import explain_profile, kind_of

RUN = Path(__file__).parent / "data" / "workloads" / "convnet-20261202-054509-vm-33d364"


@pytest.fixture(scope="module")
def run() -> store.Run:
    return store.load(RUN)


def test_every_chosen_group_was_profiled_in_launch_order_from_the_first_measured_step(
    run: store.Run,
) -> None:
    """Before the fixes: the top group (a wgrad convolution whose name the profiler left mangled)
    went unprofiled, and the compiled run's counter pass profiled no kernel at all."""
    counters = run.manifest["counters"]
    assert counters["status"] == "ok" and counters["matched_by"] == "launch order"
    assert counters["launch_skip"] == 0  # counted from where the 6th of 8 steps opens
    assert "Kernel" in counters["kernel_names"]  # ncu's function name for the mangled one
    top = run.cases.sort_values("rank").head(len(counters["groups"]))
    assert list(top["case"]) == counters["groups"]
    assert top["dram_throughput_pct"].notna().all()
    first = top.iloc[0]
    assert first["kernel_name"].startswith("_ZN17cutlass__5x_cudnn6KernelI")
    assert first["variant"].startswith("Kernel(convolution_backward)")
    assert kind_of(first.to_dict()) == "convolution"
    assert counters["source_pass"]["status"] == "ok" and len(run.source_lines) == 48


def test_a_generated_kernels_bank_conflicts_are_a_fact_where_its_time_is_in_its_loads(
    run: store.Run,
) -> None:
    """Inductor's batch-norm backward reduction: 47.5% of its shared wavefronts conflict, but the
    stalls on shared memory hold 10% of its stalls (long scoreboard 68%, 82% of it on one load
    line): not padded shared memory; and the code is torch.compile's, so its options."""
    findings = {f.case: f for f in explain_profile(run).findings}
    (case,) = [c for c in findings if "triton_red_fused" in c]
    f = findings[case]
    row = run.cases.set_index("case").loc[case]
    assert family(row["kernel_name"]) == Family.INDUCTOR
    bank = [r for r in f.reasons if r.cause == Cause.BANK_CONFLICTS]
    assert bank and bank[0].detail.get("minor")
    assert "not where the time goes" in reason_text(bank[0], f.evidence)
    assert 5 < f.evidence["shared_stall_share_pct"] < 20
    assert Action.PAD_SHARED not in [s.action for s in f.next]
    assert f.next[0].action == Action.COMPILER_OPTIONS
    assert "torch.compile generated" in advice_text(f.next[0])


def test_the_headline_names_the_convolutions_and_the_step_run_alone(run: store.Run) -> None:
    headline = explain_profile(run).notes["convnet"]
    pace = run.manifest["pace"]
    assert pace["status"] == "ok" and pace["gpu_idle_pct"] < pace["profiled_gpu_idle_pct"]
    assert headline.startswith(
        f"The GPU is idle {pace['gpu_idle_pct']:.0f}% of the step (host gaps; "
        f"{pace['profiled_gpu_idle_pct']:.0f}% under the profiler)"
    )
    assert "convolution launches per step" in headline and "near its roof" not in headline
