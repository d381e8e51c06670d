"""`profkit profile` on a GPT-2 124M training step on the H200 (examples/gpt_train.py: bf16
autocast over fp32 weights, fused AdamW, batch 8 x 1024, 50,257-token vocabulary; the last 10 of
20 steps measured; jobs/profile_gpt.toml, session 13, 2026-12-04): the counter pass profiled,
through the gate (issue 33), exactly the 10 launches it used, then stopped the program; each of
the top 10 groups is named for what it is and told a fix an engineer training that model would
act on. Tables only (no raw report), from tests/data/workloads/."""

from __future__ import annotations

from pathlib import Path

import pytest

from profkit import store
from profkit.counters.metrics import SAMPLE_COUNT, STALL_REASONS
from profkit.explain import Action
from profkit.explain.phrases import advice_text
from profkit.workload.explain import explain_profile
from profkit.workload.op_class import OpClass, fix, label, op_class

RUN = Path(__file__).parent / "data" / "workloads" / "gpt_train-20261204-205444-vm-ce64d1"
# the catalogue's generic advice for library code, which an op fused already must not get
FUSE_AWAY = "fuse it away"


@pytest.fixture(scope="module")
def run() -> store.Run:
    return store.load(RUN)


@pytest.fixture(scope="module")
def top(run: store.Run) -> list[dict]:
    return run.cases.sort_values("rank").head(10).to_dict("records")


def test_the_gate_profiled_the_launches_it_predicted(run: store.Run, top: list[dict]) -> None:
    """ncu profiled what the gate predicted, matched by launch order: the 10 chosen launches, the
    fused AdamW call's later chunks cut by the launch count, and the program was stopped after
    the last (140 passes, 23.3 s; session 11's window took 251 launches, 4,769 passes, 197.8 s;
    its gate 16 launches, 304 passes). The
    run's timing export (1.5 MB) is left out of the stored copy (store.EVIDENCE_ONLY) to keep the
    tree small; the gate's derivation from an export is tested on hand-built ones
    (test_profile.py)."""
    c = run.manifest["counters"]
    assert c["status"] == "ok" and c["selection"] == "gate" and c["matched_by"] == "launch order"
    assert (c["kernels_profiled"], c["launches_expected"], c["launches_used"]) == (10, 10, 10)
    assert c["passes"] == 140
    assert c["groups"] == [r["case"] for r in top]
    assert sorted(run.kernels["case"]) == sorted(r["case"] for r in top)
    assert len(c["gate_calls"]) == 10 and run.verified
    assert c["program_stopped"] is True


def test_backwards_sums_are_named_by_their_autograd_node(run: store.Run) -> None:
    """The timing export names each backward launch's autograd node (grad_fn): the top backward
    aten::sum group is the Linear layers' bias gradients (AddmmBackward0), told to fold them; a
    sum under AddBackward0 (a broadcast add's, such as the position embedding's over the batch)
    is a broadcast's gradient, without the bias story."""
    sums = run.cases[(run.cases["op"] == "aten::sum") & run.cases["grad_fn"].notna()]
    assert set(sums["grad_fn"]) == {"AddmmBackward0", "AddBackward0"}
    found = {f.case: f for f in explain_profile(run).findings}
    f = found[sums.sort_values("rank")["case"].iloc[0]]
    assert "backward sums (aten::sum in AddmmBackward0: Linear layers' bias gradients)" in f.subject
    assert f.next[0].action == Action.BIAS_GRADS and f.next[0].because == ["op", "grad_fn"]
    other = sums[sums["grad_fn"] == "AddBackward0"].iloc[0].to_dict()
    assert label(other, op_class(other)) == (
        "backward sums (aten::sum in AddBackward0: a broadcast's gradient)"
    )
    assert fix(other, op_class(other)) is None


def test_each_top_group_is_told_a_fix_and_no_fused_op_to_fuse_away(run: store.Run) -> None:
    findings = explain_profile(run).findings
    assert len(findings) == 10
    for f in findings:
        assert f.next, f.subject
        said = advice_text(f.next[0])
        cls = OpClass(f.evidence["op_class"])
        if cls in (OpClass.OPTIMIZER, OpClass.LOSS, OpClass.ATTENTION, OpClass.NORM,
                   OpClass.CAST, OpClass.MATMUL):  # fmt: skip
            assert FUSE_AWAY not in said, f.subject


def test_the_output_heads_unaligned_gemms_are_told_to_pad_the_vocabulary(
    run: store.Run, top: list[dict]
) -> None:
    """At 50,257 tokens the head's three GEMMs (forward, both gradients) ran CUTLASS's align1
    kernels: the top three groups, at a Tensor pipe far from the roof."""
    heads = [r for r in top if "_align1" in r["kernel_name"]]
    assert len(heads) == 3 and [r["rank"] for r in heads] == [1, 2, 3]
    assert all(r["tensor_any_pct"] < 50 for r in heads)
    findings = {f.case: f for f in explain_profile(run).findings}
    for r in heads:
        step = findings[r["case"]].next[0]
        assert step.action == Action.ALIGN_GEMM and "50,304" in advice_text(step)


def test_the_optimizer_step_is_named_and_told_precision_or_state(
    run: store.Run, top: list[dict]
) -> None:
    (opt,) = [r for r in top if op_class(r) == OpClass.OPTIMIZER]
    f = {f.case: f for f in explain_profile(run).findings}[opt["case"]]
    assert "optimizer step (fused AdamW, multi-tensor kernels)" in f.subject
    assert f.next[0].action == Action.OPTIMIZER_STATE
    assert "not from fusing it" in advice_text(f.next[0])


def test_the_cross_entropys_cast_is_the_loss_told_the_fused_linear_cross_entropy(
    run: store.Run, top: list[dict]
) -> None:
    """Autocast runs cross_entropy in float32: the bf16 logits (8192 x 50,257) are cast up inside
    aten::cross_entropy_loss (the group's outer op), a loss cost, not a cast to fold."""
    (cast,) = [r for r in top if r.get("outer_op") == "aten::cross_entropy_loss"]
    assert op_class(cast) == OpClass.LOSS and cast["op"] == "aten::copy_"
    f = {f.case: f for f in explain_profile(run).findings}[cast["case"]]
    assert f.subject.startswith("3.3% cross-entropy: its input cast to float32 (copy_)")
    assert f.next[0].action == Action.FUSED_LINEAR_CE


def test_the_headline_table_gives_the_step_per_op_class(run: store.Run) -> None:
    head, *table = explain_profile(run).notes["gpt_train"].split("\n")
    classes = [line.split()[0] for line in table[1:-1]]
    assert {"matmul", "attention", "norm", "optimizer", "loss", "copy/cast"} <= set(classes)
    shares = [float(line.split()[-4].rstrip("%")) for line in table[1:-1]]
    idle = float(table[-1].split()[-1].rstrip("%"))
    assert shares == sorted(shares, reverse=True) and classes[0] == "matmul"
    assert 90 < sum(shares) + idle < 105  # the step alone: kernels, and the GPU's idle share
    assert "Counter pass: ncu profiled 10 launches to use 10 (the top 10 groups, gate" in head
    # the cost against the program's own run: 23.338 s over the pace pass's plain run, 12.109 s
    assert (
        "(140 passes, stall reasons sampled) in 23.3 s, 1.93x the program run plainly in the pace"
        " pass (12.1 s), the program stopped after the last" in " ".join(head.split())
    )


def test_the_stall_shares_were_sampled_in_one_pass(run: store.Run) -> None:
    """The counter pass asked for PC sampling, not the 14 stall counters (metrics.PROFILE_METRICS),
    and each profiled launch's stall shares came from the samples: as shares of one sample
    count they sum to at most 100% (the rest: warps selected to issue)."""
    asked = run.manifest["counters"]["metrics"]
    assert SAMPLE_COUNT in asked and not any("warp_issue_stalled" in m for m in asked)
    stalls = run.kernels[[f"stall_{r}_pct" for r in STALL_REASONS]]
    assert stalls.notna().all().all()
    assert ((stalls.sum(axis=1) > 50) & (stalls.sum(axis=1) <= 100.0 + 1e-6)).all()
