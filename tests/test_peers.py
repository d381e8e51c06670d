"""Peers in the lab: a variant that needs an optional extra (Liger-Kernel) or cannot run under
Triton's interpreter is skipped with a note, never an error; Liger's ops match the lab's
semantics where the interpreter can run them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before triton is first imported (see test_cli.py)

import pandas as pd  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from profkit.capture import runnable_variants  # noqa: E402
from profkit.cli import cli  # noqa: E402
from profkit.errors import ProfkitError  # noqa: E402
from profkit.explain import Action, explain_launches  # noqa: E402
from profkit.explain import kernel_family as lib  # noqa: E402
from profkit.explain.phrases import first_advice_text  # noqa: E402
from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import KernelSpec, Variant, find_spec  # noqa: E402

MISSING = "profkit_no_such_module"


def _spec(*variants: Variant) -> KernelSpec:
    return KernelSpec(
        name="k",
        description="",
        variants=variants,
        make_inputs=lambda *a: {},
        reference=lambda i: None,
        dtypes=("float32",),
        shapes=((4, 4),),
        tolerances={"float32": (0, 0)},
        bytes_moved=lambda s, i: 0,
        flops=lambda s: 0,
    )


def _fn(inputs: dict) -> None:
    return None


def test_a_variant_whose_module_is_missing_is_skipped_with_why() -> None:
    spec = _spec(
        Variant("lab", _fn),
        Variant("peer", _fn, baseline=True, requires=(MISSING,), description="extra [x]"),
        Variant("gpu_only", _fn, interpretable=False),
    )
    names = ("lab", "peer", "gpu_only")
    kept, skipped = runnable_variants(spec, names, interpret=False)
    assert kept == ("lab", "gpu_only")
    assert skipped == {"peer": f"needs {MISSING}, not installed here (extra [x])"}
    kept, skipped = runnable_variants(spec, names, interpret=True)
    assert kept == ("lab",)
    assert skipped["gpu_only"] == "its kernels do not run under Triton's interpreter"


def test_no_runnable_variant_is_one_error() -> None:
    spec = _spec(Variant("peer", _fn, requires=(MISSING,)))
    with pytest.raises(ProfkitError, match=f"k: no variant can run here .peer: needs {MISSING}"):
        runnable_variants(spec, ("peer",), interpret=False)


def test_the_lab_liger_variants_need_the_peers_extra() -> None:
    for kernel in ("rmsnorm", "softmax"):
        liger = find_spec(kernel).variant("liger")
        assert liger.baseline and liger.requires == ("liger_kernel",)
        assert "[peers]" in liger.description
    # Liger's RMSNorm calls eps.to(...) on a scalar, which the interpreter cannot
    assert not find_spec("rmsnorm").variant("liger").interpretable


USER_SPEC = f"""
import torch
from profkit.spec import KernelSpec, Variant


def double(inputs):
    return inputs["x"] * 2


SPEC = KernelSpec(
    name="double",
    description="x * 2",
    variants=(
        Variant("torch", double),
        Variant("peer", double, baseline=True, requires=("{MISSING}",)),
    ),
    make_inputs=lambda shape, dtype, device, gen: {{"x": torch.randn(shape, generator=gen)}},
    reference=lambda inputs: inputs["x"].double() * 2,
    dtypes=("float32",),
    shapes=((4, 4),),
    tolerances={{"float32": (1e-6, 1e-6)}},
    bytes_moved=lambda shape, itemsize: 2 * shape[0] * shape[1] * itemsize,
    flops=lambda shape: shape[0] * shape[1],
)
"""


@pytest.mark.interpret
def test_capture_skips_a_missing_peer_with_a_note_and_keeps_it_in_the_run(tmp_path: Path) -> None:
    user = tmp_path / "double.py"
    user.write_text(USER_SPEC)
    out = tmp_path / "runs"
    args = ["capture", "double", "--from", str(user), "--interpret", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    note = f"note: double variant peer skipped: needs {MISSING}, not installed here"
    assert note in " ".join(result.stderr.split())  # wrapped to the terminal's width
    [run] = [p for p in out.iterdir() if not p.name.startswith(".")]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["options"]["variants"] == ["torch"]
    assert manifest["skipped_variants"] == {"peer": f"needs {MISSING}, not installed here"}
    # asked for by name, alone: nothing can run, one line and status 1
    result = CliRunner().invoke(cli, [*args, "--variant", "peer"])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "no variant can run here" in result.stderr


@pytest.mark.interpret
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_liger_softmax_matches_float64_reference(dtype: str) -> None:
    pytest.importorskip("liger_kernel")
    spec = find_spec("softmax")
    for shape in spec.interpret_shapes:
        result = check(spec, spec.variant("liger").fn, shape, dtype, "cpu", seed=3)
        assert result.correct, result.error


# --- Liger's kernels in explain ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "_rms_norm_forward_kernel",
        "_block_rms_norm_forward_kernel",
        "_fused_add_rms_norm_forward_kernel",
        "_softmax_single_block_forward_kernel",
        "_softmax_multi_block_forward_kernel",
        "_swiglu_forward_kernel",
    ],
)
def test_liger_kernels_are_library_code(name: str) -> None:
    assert lib.family(name) == lib.Family.LIGER and lib.Family.LIGER in lib.LIBRARY
    # Liger's by its own name whatever the variant (issue 30: a lab variant calling Liger, as the
    # hold-out's ho_layer_norm liger does, does not own Liger's code)
    assert lib.launch_family({"kernel_name": name}, lab=False) == lib.Family.LIGER
    assert lib.launch_family({"kernel_name": name}, lab=True) == lib.Family.LIGER


def test_liger_names_are_liger_0_8_5s_own() -> None:
    # every name in the table is a @triton.jit kernel of the installed Liger's ops
    ops = Path(pytest.importorskip("liger_kernel.ops").__file__).parent
    source = "\n".join(p.read_text() for p in ops.glob("*.py"))
    assert {n for n in lib.LIGER_NAMES if f"def {n}(" not in source} == set()
    # the lab's kernels and the Triton tutorials' names are not Liger's
    for name in ("_rmsnorm_kernel", "_softmax_rows_kernel", "_layer_norm_fwd_fused"):
        assert lib.family(name) == lib.Family.OTHER


def test_a_liger_launch_gets_what_a_liger_user_can_change() -> None:
    latency = {"memory_throughput_pct": 25.0, "dram_throughput_pct": 20.0}
    small = {"sm_throughput_pct": 20.0, "waves_per_sm": 0.5, "grid_size": 64.0}
    found = {}
    for name in ("_rms_norm_forward_kernel", "_rmsnorm_kernel"):
        kernels = pd.DataFrame([{"launch": 0, "kernel_name": name, **latency, **small}])
        (found[name],) = explain_launches(kernels, None)
    # the same counters: a user's kernel is told to split its work, Liger's user to change the
    # call (its options, a fused op) since Liger fixes its launch
    assert [s.action for s in found["_rmsnorm_kernel"].next] == [Action.MORE_PROGRAMS]
    liger = found["_rms_norm_forward_kernel"]
    assert [s.action for s in liger.next] == [Action.LIBRARY_OPTIONS]
    said = first_advice_text(liger)
    assert "Liger-Kernel code" in said and "casting_mode" in said


def test_liger_launches_in_the_h200_peer_run_are_named_and_advised_as_liger() -> None:
    from profkit import store
    from profkit.explain import FindingKind, explain_run

    run = store.load(Path(__file__).parent / "data" / "peers" / "rmsnorm-20261202-023438-vm-1e156f")
    cases = [f for f in explain_run(run) if f.kind == FindingKind.CASE and f.variant == "liger"]
    assert len(cases) == 24
    # one launch per case, named as Liger's
    liger = run.kernels[run.kernels.case.str.contains(".liger.", regex=False)]
    assert len(liger) == 24
    assert {lib.launch_family(row, lab=False) for row in liger.to_dict("records")} == {"liger"}
    # the decode shapes' small grids: a launch-shape cause, whose remedy is Liger's call
    small = [f for f in cases if f.shape == "16x8192"]
    assert small and all(Action.LIBRARY_OPTIONS in [s.action for s in f.next] for f in small)
    lab = [f for f in explain_run(run) if f.kind == FindingKind.CASE and f.variant == "triton"]
    assert Action.LIBRARY_OPTIONS not in {s.action for f in lab for s in f.next}
