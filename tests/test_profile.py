"""profkit profile's stages off the GPU: a Chrome trace -> the timing export (trace), the export
-> steps, kernel groups, shares and host gaps (timing_pass), and the counter pass's choice of
launches and their match to a real ncu report (counter_pass), on hand-checkable data
(tests/workload_export.py) and the fx_rmsnorm fixture report."""

from __future__ import annotations

import pandas as pd
import pytest
from workload_export import CAST, COPY, FILL, MEAN, MUL, RSQRT, hand_export

from profkit.errors import ProfkitError
from profkit.workload import counter_pass, timing_pass
from profkit.workload.program import parse_program
from profkit.workload.trace import export_from_trace

STEP_KERNEL_US = 251.296  # the nine kernels of one step (workload_export)
STEP_SPAN_US = 300.296  # their GPU span, with 8 gaps of 5 us, then a 4 us memset after a gap


def region_of(export: dict, **kwargs) -> tuple:
    acts, ranges = timing_pass.frames(export)
    region = timing_pass.measure_region(acts, ranges, **kwargs)
    table, samples = timing_pass.groups(region, "tiny")
    return acts, region, table, samples


# --- trace: Chrome trace -> export ----------------------------------------------------------------


def _x(cat: str, name: str, ts: float, dur: float, tid: int, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid,
            "args": args}  # fmt: skip


def test_a_kernel_gets_its_launch_ranges_op_and_dtype_from_the_trace() -> None:
    trace = {
        "traceEvents": [
            _x("user_annotation", "step", 0, 100, tid=1),
            _x("user_annotation", "mlp", 10, 20, tid=1),
            _x("cpu_op", "aten::linear", 11, 10, tid=1),
            _x("cpu_op", "aten::mm", 12, 5, tid=1, **{"Input type": ["c10::BFloat16"]}),
            _x("cuda_runtime", "cudaLaunchKernel", 13, 1, tid=1, correlation=5),
            # launched from another thread (autograd's) while "step" is open on the main one
            _x("cpu_op", "aten::mul", 50, 5, tid=2, **{"Input type": ["float", "Scalar"]}),
            _x("cuda_driver", "cuLaunchKernel", 51, 1, tid=2, correlation=6),
            _x("kernel", "gemm", 20, 8, tid=7, correlation=5, grid=[8, 4, 1], block=[128, 1, 1]),
            _x("kernel", "mul", 60, 2, tid=7, correlation=6, grid=[2, 1, 1], block=[64, 1, 1]),
            _x("gpu_memset", "Memset", 70, 1, tid=7, correlation=7),
            {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "x"}},
        ]
    }
    export = export_from_trace(trace, {"exit_status": 0})
    rows = [
        dict(zip(export["kernels"]["columns"], r, strict=True)) for r in export["kernels"]["rows"]
    ]
    gemm, mul, memset = rows
    assert (gemm["ranges"], gemm["op"], gemm["dtype"]) == ("step > mlp", "aten::mm", "bfloat16")
    assert (gemm["grid"], gemm["block"], gemm["launch_us"]) == ("8x4x1", "128x1x1", 13)
    assert (mul["ranges"], mul["op"], mul["dtype"]) == ("step", "aten::mul", "float32")
    assert (memset["kind"], memset["launch_us"], memset["ranges"]) == ("memset", None, "")
    assert [r[0] for r in export["ranges"]["rows"]] == ["step", "mlp"]


def test_backwards_launches_name_the_autograd_node_that_ran_them() -> None:
    """torch.profiler's names (as a CPU trace of a Linear's backward has them): the engine's
    evaluate_function range holds the node's aten calls on autograd's thread; a forward launch
    has no node."""
    node = "autograd::engine::evaluate_function: "
    trace = {
        "traceEvents": [
            _x("cpu_op", "aten::sum", 0, 10, tid=1),
            _x("cuda_runtime", "cudaLaunchKernel", 1, 1, tid=1, correlation=1),
            _x("cpu_op", f"{node}AddmmBackward0", 20, 30, tid=2),
            _x("cpu_op", "AddmmBackward0", 21, 28, tid=2),
            _x("cpu_op", "aten::sum", 30, 10, tid=2),
            _x("cuda_runtime", "cudaLaunchKernel", 31, 1, tid=2, correlation=2),
            _x("cpu_op", f"{node}torch::autograd::AccumulateGrad", 60, 10, tid=2),
            _x("cpu_op", "aten::add_", 61, 5, tid=2),
            _x("cuda_runtime", "cudaLaunchKernel", 62, 1, tid=2, correlation=3),
            *(
                _x("kernel", f"k{c}", 100 + c, 1, tid=7, correlation=c, grid=[1, 1, 1])
                for c in (1, 2, 3)
            ),
        ]
    }
    export = export_from_trace(trace, {})
    got = [
        dict(zip(export["kernels"]["columns"], r, strict=True)) for r in export["kernels"]["rows"]
    ]
    assert [(r["op"], r["grad_fn"]) for r in got] == [
        ("aten::sum", None), ("aten::sum", "AddmmBackward0"), ("aten::add_", "AccumulateGrad")
    ]  # fmt: skip
    acts, ranges = timing_pass.frames(export)
    region = timing_pass.measure_region(acts, ranges)
    table, _ = timing_pass.groups(region, "tiny")
    nodes = table.set_index("kernel_name")["grad_fn"]
    assert pd.isna(nodes["k1"]) and (nodes["k2"], nodes["k3"]) == (
        "AddmmBackward0",
        "AccumulateGrad",
    )


# --- timing pass ----------------------------------------------------------------------------------


def test_steps_after_warm_up_are_measured_and_groups_ranked_by_device_time() -> None:
    _, region, table, samples = region_of(hand_export(steps=3), step_range="step", steps=2)
    assert (region.steps_seen, region.steps_skipped, region.steps_measured) == (3, 1, 2)
    assert region.kernel_ms == pytest.approx(2 * STEP_KERNEL_US / 1e3)
    # two steps' GPU span: the second step starts 1000 us after the first
    assert region.span_ms == pytest.approx((1000 + STEP_SPAN_US) / 1e3)
    ranked = [MUL, RSQRT, COPY, CAST, "_rmsnorm_kernel", MEAN, FILL]
    assert list(table["kernel_name"]) == ranked
    mul = table.iloc[0]
    assert mul["variant"] == "vectorized_elementwise_kernel(mul)@eager"
    assert (mul["launches"], mul["launches_per_step"]) == (4, 2)
    assert mul["time_share_pct"] == pytest.approx(100 * (30.528 + 23.168) / STEP_KERNEL_US)
    # 2 launches of 30.528 us and 2 of 23.168 us
    assert mul["device_p95_ms"] == pytest.approx(0.030528)
    assert mul["device_p50_ms"] == pytest.approx((0.030528 + 0.023168) / 2)
    assert table["time_share_pct"].sum() == pytest.approx(100)
    assert table.iloc[4]["variant"] == "_rmsnorm_kernel@fused"
    assert not table.iloc[4]["baseline"] and table.iloc[0]["baseline"]  # ATen is library code
    assert len(samples) == 18 and set(samples["case"]) == set(table["case"])


def test_host_gaps_are_the_idle_share_of_the_gpu_span() -> None:
    _, region, _, _ = region_of(hand_export(), step_range="step", steps=1)
    assert region.host_gap_pct == pytest.approx(100 * 45 / STEP_SPAN_US)
    assert region.busy_ms == pytest.approx((STEP_KERNEL_US + 4) / 1e3)


def test_asking_for_every_step_still_leaves_out_one_for_warm_up() -> None:
    _, region, _, _ = region_of(hand_export(steps=2), step_range="step", steps=5)
    assert (region.steps_skipped, region.steps_measured) == (1, 1)
    assert "leaves no warm-up step" in region.notes[0]


def test_without_step_marks_the_whole_program_is_one_region() -> None:
    _, region, table, _ = region_of(hand_export(steps=2))
    assert (region.steps_seen, region.steps_measured) == (0, 0)
    assert region.kernel_ms == pytest.approx(2 * STEP_KERNEL_US / 1e3)
    assert table.iloc[0]["launches_per_step"] == 4


def test_group_by_op_groups_by_the_pytorch_op() -> None:
    _, _, table, _ = region_of(hand_export(), group_by="op")
    assert "vectorized_elementwise_kernel(mul)@aten::mul" in set(table["variant"])
    assert "_rmsnorm_kernel@(none)" not in set(table["variant"])  # no op: no range in its label
    assert "_rmsnorm_kernel" in set(table["variant"])


def test_a_step_range_that_matches_nothing_names_the_ranges_seen() -> None:
    with pytest.raises(ProfkitError, match=r"'iteration' matches no range.*step, fused, eager"):
        region_of(hand_export(), step_range="iteration")


def test_steps_that_launched_no_kernel_are_said_plainly() -> None:
    export = hand_export()
    export["ranges"]["rows"].append(["step", 5000.0, 5100.0, 1])  # a last step, kernels elsewhere
    with pytest.raises(ProfkitError, match=r"measured steps of 'step' launched no CUDA kernel"):
        region_of(export, step_range="step", steps=1)


def test_no_kernel_is_said_plainly() -> None:
    export = hand_export()
    export["kernels"]["rows"] = [r for r in export["kernels"]["rows"] if r[0] != "kernel"]
    with pytest.raises(ProfkitError, match="launched no CUDA kernel"):
        region_of(export)


# --- counter pass: which launches, and their counters ---------------------------------------------


def test_the_top_groups_first_launches_after_warm_up_make_ncus_window() -> None:
    acts, region, table, _ = region_of(hand_export(), step_range="step", steps=1)
    sel, notes = counter_pass.select(acts, region, table, top=3)
    assert sel.cases == list(table["case"].head(3)) and not notes
    assert sel.names == ["elementwise_kernel", "unrolled_elementwise_kernel",
                         "vectorized_elementwise_kernel"]  # fmt: skip
    # 7 launches per step match those names; the chosen ones are the second step's COPY (its 1st),
    # MUL (2nd) and RSQRT (5th)
    assert (sel.skip, sel.count) == (7, 5)
    assert sel.argv()[-4:] == ["--launch-skip", "7", "--launch-count", "5"]
    argv = sel.argv()
    assert argv[argv.index("--kernel-name") + 1] == (
        "regex:^(?:elementwise_kernel|unrolled_elementwise_kernel|vectorized_elementwise_kernel)$"
    )


def test_launch_skip_picks_a_later_launch_and_says_when_a_group_has_too_few() -> None:
    acts, region, table, _ = region_of(hand_export(), step_range="step", steps=1)
    sel, notes = counter_pass.select(acts, region, table, top=1, launch_skip=1)
    # 4 launches a step are vectorized_elementwise_kernel's (MUL, FILL, FILL, MUL): the second
    # step's second MUL is the 8th
    assert (sel.skip, sel.count) == (7, 1)
    sel, notes = counter_pass.select(acts, region, table, top=2, launch_skip=1)
    assert len(notes) == 1 and "(rsqrt)" in notes[0] and "fewer than --launch-skip 1" in notes[0]


def test_a_range_filter_keeps_its_kernels_and_names_the_ranges_when_it_matches_nothing() -> None:
    acts, region, table, _ = region_of(hand_export(), step_range="step", steps=1)
    sel, _ = counter_pass.select(acts, region, table, range_name="fused")
    assert sel.cases == ["tiny._rmsnorm_kernel@fused"] and (sel.skip, sel.count) == (1, 1)
    with pytest.raises(ProfkitError, match=r"--range 'attention' holds no kernel.*eager.*fused"):
        counter_pass.select(acts, region, table, range_name="attention")
    with pytest.raises(ProfkitError, match=r"--kernel-regex 'gemm' matches no kernel"):
        counter_pass.select(acts, region, table, kernel_regex="gemm")


def test_profiled_launches_match_the_groups_by_launch_order(ncu_tables) -> None:
    acts, region, table, _ = region_of(hand_export(), step_range="step", steps=1)
    sel, _ = counter_pass.select(acts, region, table, top=10)
    assert (sel.skip, sel.count) == (9, 9)  # the second step's nine launches: fx_rmsnorm's
    report = ncu_tables("fx_rmsnorm").kernels.copy()
    matched, how = counter_pass.match(sel, report, table)
    assert how == "launch order"
    # the chosen launch of each group: its first in the step (MUL's 2nd, FILL's 2nd are left out)
    assert list(matched["launch"]) == [0, 1, 2, 3, 4, 6, 8]
    by = matched.set_index("case")
    mul = table.loc[table["kernel_name"] == MUL, "case"].item()
    assert by.loc[mul, "dram_throughput_pct"] == report.loc[2, "dram_throughput_pct"]
    assert by.loc[mul, "variant"] == "vectorized_elementwise_kernel(mul)@eager"


def test_when_ncu_saw_another_order_launches_match_by_name_and_grid(ncu_tables) -> None:
    acts, region, table, _ = region_of(hand_export(), step_range="step", steps=1)
    sel, _ = counter_pass.select(acts, region, table, top=10)
    report = ncu_tables("fx_rmsnorm").kernels.iloc[::-1].reset_index(drop=True)
    matched, how = counter_pass.match(sel, report, table)
    assert how.startswith("name and grid")
    rsqrt = table.loc[table["kernel_name"] == RSQRT, "case"].item()
    cast = table.loc[table["kernel_name"] == CAST, "case"].item()
    # both are elementwise_kernel; their grids (65536, 32768 blocks) tell them apart
    by = matched.set_index("case")
    assert by.loc[rsqrt, "grid_size"] == 65536 and by.loc[cast, "grid_size"] == 32768
    assert matched["case"].is_unique  # one launch each, as chosen


def test_passes_are_summed_from_ncus_lines() -> None:
    log = ('==PROF== Profiling "a" - 0: 0%....50%....100% - 11 passes\n'
           '==PROF== Profiling "b" - 1: 0%....50%....100% - 1 pass\n')  # fmt: skip
    assert counter_pass.passes(log) == 12


# --- the command ----------------------------------------------------------------------------------


def test_a_python_command_is_split_and_its_arguments_kept(tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text("")
    prog = parse_program(["python3", "-u", str(script), "--lr", "1e-3", "--", "x y"])
    assert (prog.target, prog.module, prog.args) == (
        str(script),
        False,
        ("--lr", "1e-3", "--", "x y"),
    )
    assert prog.name == "train"
    assert prog.child_argv(None)[-5:] == [str(script), "--lr", "1e-3", "--", "x y"]
    mod = parse_program(["/usr/bin/python3.12", "-m", "pkg.train", "-v"])
    assert (mod.target, mod.module, mod.args, mod.name) == ("pkg.train", True, ("-v",), "train")


@pytest.mark.parametrize(
    "argv, words",
    [
        (["./train"], "not a Python interpreter"),
        (["nvidia-smi"], "needs `python SCRIPT.py ARGS`"),
        (["python3", "-c", "print(1)"], "expected a script or -m MODULE"),
        (["python3", "no_such_script.py"], "no such script"),
    ],
)
def test_a_command_the_timing_pass_cannot_run_is_named(argv, words) -> None:
    with pytest.raises(ProfkitError, match=words.replace("(", r"\(")):
        parse_program(argv)


def test_the_childs_nvtx_ranges_open_profiler_ranges_too(monkeypatch, tmp_path) -> None:
    """On a CPU build NVTX itself raises, so NVTX is stood in for; the wrapper is the child's."""
    import json

    import torch

    from profkit.workload import child

    pushed: list[str] = []
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda msg: pushed.append(msg) or 0)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: pushed.pop() and 0)
    child._nvtx_opens_ranges()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with torch.cuda.nvtx.range("step"):
            torch.cuda.nvtx.range_push("mlp")
            torch.ones(4).add_(1)
            torch.cuda.nvtx.range_pop()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    export = export_from_trace(json.loads(trace.read_text()), {})
    assert [r[0] for r in export["ranges"]["rows"]] == ["step", "mlp"]
    assert pushed == []  # every push popped, NVTX's own calls made as before


def test_a_steps_period_is_the_mean_interval_between_the_measured_steps_opens() -> None:
    from profkit.workload.pace import idle_pct, period_ms

    opens = [0.0, 10.0, 14.0, 17.0, 21.0]  # warm-up, then steps of 3 and 4 ms
    assert period_ms(opens, 3) == (3.5, 2)  # the last 3 steps: 2 intervals seen
    assert period_ms(opens, 1) == (4.0, 1)  # one step measured: the interval into it
    assert period_ms(opens, 9) == (5.25, 4)
    assert period_ms([5.0], 1) is None
    assert idle_pct(1.0, 4.0) == 75.0
    assert idle_pct(1.0, 0.8) == 0.0  # the host clock's noise never makes a step shorter


def test_the_child_starts_the_cuda_profiler_where_the_first_measured_step_opens(
    monkeypatch,
) -> None:
    """--start-at-step 2: cudaProfilerStart once, as the third step range opens (ncu runs with
    --profile-from-start off). NVTX and record_function are restored after the test."""
    import torch
    from torch.autograd.profiler import record_function

    from profkit.workload import child

    _restore_hooks_after(monkeypatch)
    started: list[int] = []
    opened: list[str] = []
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: started.append(len(opened)))
    child._start_profiler_at("step", 2)
    for i in range(4):
        with record_function("step"):
            opened.append(f"step{i}")
            with record_function("inner"):
                pass
    assert started == [2]  # as the third step opens (two have run), once


# --- the gate: exactly the chosen launches --------------------------------------------------------


GATE_ARGV = ["--profile-from-start", "off", "--nvtx", "--kernel-name-base", "function",
             "--kernel-name"]  # fmt: skip


def gate_selection(**kwargs) -> tuple:
    export = hand_export(calls=True)
    acts, region, table, _ = region_of(export, step_range="step", steps=1)
    ops = timing_pass.op_calls(export)
    return counter_pass.select(acts, region, table, step_range="step", ops=ops, **kwargs)


def test_the_gate_profiles_exactly_the_chosen_launches_inside_their_op_calls() -> None:
    sel, notes = gate_selection(top=3)
    assert not notes and sel.cases[:1] == ["tiny.vectorized_elementwise_kernel(mul)@eager"]
    # the measured step's first call of each op (numbered from where it opens)
    assert sel.gate == (("aten::copy", 0), ("aten::mul", 0), ("aten::rsqrt", 0))
    assert list(sel.sequence["name"]) == [COPY, MUL, RSQRT] and sel.count == 3
    assert sel.argv() == [*GATE_ARGV, "regex:^(?:elementwise_kernel|unrolled_elementwise_kernel|"
                          "vectorized_elementwise_kernel)$", "--launch-count", "3"]  # fmt: skip
    assert "--launch-skip" not in sel.argv()


def _chunks(grids: list[str], chosen: dict[int, str]) -> pd.DataFrame:
    """Gated launches as the gate holds them: rows of the program's kernel table, whose index
    is not their position."""
    n = len(grids)
    return pd.DataFrame({"order": range(n), "name": ["multi_tensor_apply_kernel"] * n,
                         "grid": grids, "block": ["512x1x1"] * n,
                         "case": [chosen.get(i) for i in range(n)]},
                        index=range(9000, 9000 + n))  # fmt: skip


def test_the_gate_profiles_one_launch_per_configuration_of_a_multi_tensor_call() -> None:
    """Fused AdamW launches one kernel in chunks, most on one grid: ncu's per-launch-config filter
    profiles the first of each configuration, not every chunk (the GPT's 6 extra launches)."""
    grids = ["320x1x1"] * 6 + ["57x1x1"]
    seq, per = counter_pass.first_per_config(_chunks(grids, {0: "adamw"}))
    assert per == 1 and list(seq["order"]) == [0, 6]
    # a chosen launch deeper in its configuration raises the count for every configuration
    seq, per = counter_pass.first_per_config(_chunks(grids, {2: "adamw"}))
    assert per == 3 and list(seq["order"]) == [0, 1, 2, 6]
    # two chosen launches of one configuration (two GEMMs on one grid): both kept
    seq, per = counter_pass.first_per_config(_chunks(["4x4x1", "4x4x1"], {0: "a", 1: "b"}))
    assert per == 2 and list(seq["case"]) == ["a", "b"]


def test_the_gate_ends_profiling_after_the_last_chosen_launch() -> None:
    """Where the chunks follow the last chosen launch (the optimizer ends a step), a global launch
    count keeps fewer than the per-configuration filter: the chosen first chunk alone."""
    grids = ["8x1x1", "320x1x1", "320x1x1", "57x1x1"]
    seq = counter_pass.up_to_last_chosen(_chunks(grids, {0: "gemm", 1: "adamw"}))
    assert list(seq["order"]) == [0, 1]
    assert len(counter_pass.first_per_config(_chunks(grids, {0: "gemm", 1: "adamw"}))[0]) == 3


def test_the_gate_opens_on_the_call_a_dispatch_mode_sees() -> None:
    """The cast's kernel runs in aten::to > aten::_to_copy > aten::copy_: aten::to decomposes above
    the dispatch modes and copy_ runs inside _to_copy, so the gate is _to_copy's call."""
    sel, _ = gate_selection(top=1, kernel_regex="CastFunctor")
    assert sel.gate == (("aten::_to_copy", 0),) and list(sel.sequence["name"]) == [CAST]


def test_a_chosen_launch_with_no_op_call_falls_back_to_the_window_and_says_so() -> None:
    sel, notes = gate_selection(top=10)  # the Triton RMSNorm kernel runs in no aten op
    # the window, counted from where the measured step opens: its nine launches
    assert sel.gate is None and (sel.skip, sel.count) == (0, 9)
    assert len(notes) == 1 and "no aten op call to gate on" in notes[0]
    assert sel.argv()[-4:] == ["--launch-skip", "0", "--launch-count", "9"]


def _restore_hooks_after(monkeypatch) -> None:
    """The child's gate hooks record_function and NVTX: the test puts them back after."""
    import torch
    from torch.autograd.profiler import record_function

    patched = [(record_function, "__enter__"), (record_function, "__exit__")]
    patched += [(torch.cuda.nvtx, "range_push"), (torch.cuda.nvtx, "range_pop")]
    for owner, attr in patched:
        monkeypatch.setattr(owner, attr, getattr(owner, attr))


def test_the_childs_gate_starts_the_profiler_only_during_the_chosen_calls(monkeypatch) -> None:
    """Two steps of record_function("step"); the gate names the second step's second mul: the
    profiler is on for it alone, in-place and out-of-place calls numbered as one name."""
    import torch
    from torch.autograd.profiler import record_function

    from profkit.workload import child

    _restore_hooks_after(monkeypatch)
    events: list[str] = []
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: events.append("start"))
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: events.append("stop"))
    x = torch.ones(4)
    with child._gate({"step_range": "step", "skipped": 1, "calls": [["aten::mul", 1]]}):
        for s in range(2):
            with record_function("step"):
                y = x * 2
                events.append(f"step{s} mul0")
                y.mul_(3)  # the second call of aten::mul, as the gate numbers them
                events.append(f"step{s} mul1")
                y = y + 1
    assert events == ["step0 mul0", "step0 mul1", "step1 mul0", "start", "stop", "step1 mul1"]


@pytest.mark.parametrize("stop", [True, False])
def test_the_childs_gate_ends_the_program_after_the_last_chosen_call_unless_told_not(
    monkeypatch, stop: bool
) -> None:
    """Two chosen calls in one step: the program is ended once both have returned (not after
    the first), and only where the gate's file says stop (profile --run-to-end writes False)."""
    import torch
    from torch.autograd.profiler import record_function

    from profkit.workload import child

    _restore_hooks_after(monkeypatch)
    events: list[str] = []
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: None)
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: None)
    spec = {"step_range": "step", "skipped": 0, "calls": [["aten::mul", 0], ["aten::add", 0]]}
    x = torch.ones(4)
    modes = torch._C._len_torch_dispatch_stack
    with child._gate({**spec, "stop": stop}, finished=lambda: events.append("ended")):
        assert modes() == 0  # the mode is entered where the measured step opens, not before
        with record_function("step"):
            assert modes() == 1
            y = x * 2
            events.append("mul")
            y = y + 1
            events.append("add")
            y = y - 1
    assert events == (["mul", "ended", "add"] if stop else ["mul", "add"])
    assert modes() == 0
