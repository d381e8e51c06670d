"""The lab's row softmax, checked on the CPU through Triton's interpreter (small shapes)."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.capture import CaptureOptions, check_shapes  # noqa: E402
from profkit.errors import ProfkitError  # noqa: E402
from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

SPEC = find_spec("softmax")
LAB = importlib.import_module("profkit_lab.softmax")
MAX_REL = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize("shape", SPEC.interpret_shapes)
def test_rows_path_matches_float64_reference(dtype, shape):
    result = check(SPEC, SPEC.variant("triton").fn, shape, dtype, "cpu", seed=7)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


@pytest.mark.parametrize("rows", [1, 2, 4])
def test_rows_per_program_configs_cover_every_row(rows):
    fn = lambda inputs: LAB.softmax_triton(inputs, LAB.Rows(128, rows, 4))  # noqa: E731
    assert check(SPEC, fn, (7, 100), "float16", "cpu", seed=3).correct


def test_baselines_match_the_reference():
    for name in ("eager", "torch"):
        assert check(SPEC, SPEC.variant(name).fn, (4, 300), "float32", "cpu", seed=1).correct


def test_bytes_and_flops_model():
    # 4096x4096 fp16: x read once and y written once = 2 * 4096 * 4096 * 2 bytes
    assert SPEC.bytes_moved((4096, 4096), 2) == 67_108_864
    assert SPEC.bytes_moved((256, 65536), 4) == 134_217_728
    assert SPEC.flops((4096, 1024)) == 5 * 4096 * 1024


@pytest.mark.parametrize(
    "shape,itemsize,path,warps",
    [
        ((4096, 1024), 2, "rows", 2),  # one short row per 64-thread program
        ((4096, 16384), 4, "rows", 32),
        ((1024, 32768), 2, "rowsplit", 8),  # long rows: 8192-element chunks, 32 per thread
        ((1024, 32768), 4, "rowsplit", 4),  # fp32: 64 per thread
        ((1024, 65536), 2, "rowsplit", 8),  # longer rows: the same
        ((256, 65536), 2, "rowsplit", 8),  # fewer rows: the same
    ],
)
def test_launch_config_per_shape_class(shape, itemsize, path, warps):
    cfg = LAB.launch_config(*shape, itemsize)
    assert (type(cfg), cfg.warps) == ({"rows": LAB.Rows, "rowsplit": LAB.RowSplit}[path], warps)
    if path == "rows":
        assert cfg.block_n >= shape[1] and cfg.rows == 1
    else:  # the chunk each program holds, and the smallest power of two of them per row
        assert cfg.block == 8192 and cfg.splits == shape[1] // 8192


def test_a_one_dimensional_shape_is_an_input_error():
    opts = CaptureOptions(
        dtypes=("float32",), shapes=((4096,),), variants=("torch",), root=".", interpret=True
    )
    with pytest.raises(ProfkitError, match="softmax takes 2-D shapes"):
        check_shapes(SPEC, opts)


@pytest.mark.parametrize(
    "shape,cls",
    [
        ((4096, 1024), "short"),
        ((4096, 4096), "mid"),
        ((16384, 8192), "mid"),
        ((4096, 16384), "wide"),
        ((1024, 32768), "long"),
        ((256, 65536), "few_long"),
    ],
)
def test_every_default_shape_has_a_class_and_a_whole_config(shape, cls):
    assert shape in SPEC.shapes and LAB.shape_class(*shape) == cls
    for itemsize in (2, 4):
        cfg = LAB.launch_config(*shape, itemsize)
        assert isinstance(cfg, (LAB.Rows, LAB.RowSplit)) and None not in vars(cfg).values()


def test_wide_rows_take_32_warps_of_16_values():
    # 16384 columns: 16 per thread (32 registers offline) instead of 32 at 16 warps (64)
    assert LAB.launch_config(4096, 16384, 2) == LAB.Rows(16384, 1, 32)


def test_mid_rows_take_one_row_per_program_at_16_values_per_thread():
    # 4096 columns in 16-bit: one row at 8 warps beat two rows at 16 (session 9, against Liger)
    assert LAB.launch_config(4096, 4096, 2) == LAB.Rows(4096, 1, 8)
    assert LAB.launch_config(16384, 8192, 4) == LAB.Rows(8192, 1, 16)


def test_long_rows_hold_32_values_per_thread_in_16_bit_and_64_in_fp32():
    # 8192-element rowsplit programs: 8 warps in 16-bit, 4 in fp32 (session 5's probe)
    assert LAB.launch_config(1024, 32768, 2) == LAB.RowSplit(8192, 4, 8)
    assert LAB.launch_config(1024, 32768, 4) == LAB.RowSplit(8192, 4, 4)
    assert LAB.launch_config(256, 65536, 2) == LAB.RowSplit(8192, 8, 8)


def test_the_config_table_switches_a_class(monkeypatch):
    monkeypatch.setitem(LAB.CONFIG, "wide", LAB.RowSplit(4096, None, 16))
    assert LAB.launch_config(4096, 16384, 2) == LAB.RowSplit(4096, 4, 16)
    monkeypatch.setitem(LAB.CONFIG, "long", LAB.Rows(None, 1, 32))
    assert LAB.launch_config(1024, 32768, 2) == LAB.Rows(32768, 1, 32)


# rowsplit: the interpreter runs it as two launches (MODE 1 stats, MODE 2 arrive + combine +
# normalize from registers, no wait); the one-launch spin-wait (MODE 0, S > 1) runs on the GPU only
@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize(
    "shape,block,splits",
    [
        ((3, 1000), 256, 4),  # ragged last chunk (1000 = 3 x 256 + 232)
        ((2, 600), 256, 4),  # the 4th chunk wholly past the row: (-inf, 0) stats, nothing stored
        ((5, 4096), 512, 8),
    ],
)
def test_rowsplit_path_matches_float64_reference(dtype, shape, block, splits):
    fn = lambda inputs: LAB.softmax_triton(inputs, LAB.RowSplit(block, splits, 4))  # noqa: E731
    result = check(SPEC, fn, shape, dtype, "cpu", seed=12)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


def test_rowsplit_rescales_chunks_to_a_late_max():
    import dataclasses

    def late_spike(*args):
        inputs = SPEC.make_inputs(*args)
        inputs["x"][:, -1] = 30.0
        return inputs

    # the spike is in the inputs, which the reference is computed from first (issue 31)
    def rowsplit(inputs):
        return LAB.softmax_triton(inputs, LAB.RowSplit(128, 8, 4))

    spiked = dataclasses.replace(SPEC, make_inputs=late_spike)
    result = check(spiked, rowsplit, (2, 1000), "float32", "cpu", seed=2)
    assert result.correct and result.rel_err < 1e-6, result


def test_rowsplit_counts_one_generation_of_splits_per_call():
    # the counters are never reset: each call adds S per row, from wherever the last one left them
    import torch

    x = torch.randn(3, 1000)
    y = torch.empty_like(x)
    LAB._COUNTERS.pop(("cpu", 3, 4), None)
    for _ in range(3):
        LAB.softmax_triton({"x": x, "out": y}, LAB.RowSplit(256, 4, 4))
    assert LAB._COUNTERS[("cpu", 3, 4)].tolist() == [12, 12, 12]


def test_rowsplit_one_launch_runs_in_the_interpreter_when_no_program_waits():
    # MODE 0 with S == 1: the program's own arrival completes its generation, so the wait loop
    # exits at once (with S > 1 the interpreter would deadlock there)
    import torch

    gen = torch.Generator().manual_seed(5)
    inputs = SPEC.make_inputs((4, 300), "float32", "cpu", gen)
    LAB._rowsplit(inputs["x"], inputs["out"], 512, 1, 4, single_launch=True)
    ref = SPEC.reference(inputs)
    assert torch.allclose(inputs["out"].double(), ref, atol=1e-8, rtol=1e-5)


def test_rowsplit_rejects_splits_that_are_not_a_power_of_two():
    import torch

    x = torch.randn(2, 300)
    with pytest.raises(ValueError, match="power of two"):
        LAB.softmax_triton({"x": x, "out": torch.empty_like(x)}, LAB.RowSplit(128, 3, 4))


def test_rowsplit_launch_config_derives_the_splits(monkeypatch):
    # splits: the smallest power of two of 8192-element chunks covering the row
    monkeypatch.setitem(LAB.CONFIG, "few_long", LAB.RowSplit(8192, None, 16))
    assert LAB.launch_config(256, 65536, 2) == LAB.RowSplit(8192, 8, 16)
    assert LAB.launch_config(256, 40000, 4) == LAB.RowSplit(8192, 8, 16)
    monkeypatch.setitem(LAB.CONFIG, "long", LAB.RowSplit(splits=None, warps=16))
    assert LAB.launch_config(1024, 32768, 2) == LAB.RowSplit(8192, 4, 16)


def test_rowsplit_wait_gives_up_with_a_nan_row_instead_of_hanging():
    # the interpreter runs program 0 to its end before program 1 arrives: the case of a
    # partner never dispatched. Program 0 stops polling after MAX_SPINS and writes NaN (so a
    # reference check fails); program 1 then completes the generation and writes its chunk
    import torch

    x = torch.randn(1, 256)
    y = torch.empty_like(x)
    LAB._COUNTERS.pop(("cpu", 1, 2), None)
    LAB._rowsplit(x, y, 128, 2, 4, single_launch=True, max_spins=4)
    assert torch.isnan(y[0, :128]).all() and torch.isfinite(y[0, 128:]).all()
    assert LAB._COUNTERS[("cpu", 1, 2)].tolist() == [2]
