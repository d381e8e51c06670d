"""The lab's fused RMSNorm, checked on the CPU through Triton's interpreter (small shapes)."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

SPEC = find_spec("rmsnorm")  # re-executes kernels/rmsnorm.py with the interpreter on
LAB = importlib.import_module("profkit_lab.rmsnorm")


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize("shape", [(4, 64), (3, 100), (2, 1024), (5, 4096)])
@pytest.mark.parametrize("variant", ["triton", "triton_v2", "triton_v3"])
def test_fused_kernel_matches_float64_reference(variant, dtype, shape):
    result = check(SPEC, SPEC.variant(variant).fn, shape, dtype, "cpu", seed=11)
    assert result.correct, result.error
    assert result.rel_err < {"float32": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}[dtype]


@pytest.mark.parametrize("config", [(128, 1, 4), (128, 2, 4), (128, 4, 8)])
def test_rows_per_program_configs_cover_every_row(config):
    # 7 rows with 2 or 4 rows per program: the last program is partly masked
    fn = lambda inputs: LAB.rmsnorm_triton_v3(inputs, config)  # noqa: E731
    assert check(SPEC, fn, (7, 100), "float16", "cpu", seed=3).correct


# v4 candidates: unmasked blocks, chunked rows (even, ragged and partial last chunk), warps
DESIGNS = [
    {"UNMASKED": True},
    {"UNMASKED": True, "W_EARLY": False, "X_EVICT": ""},
    {"CHUNK": 32},
    {"CHUNK": 32, "UNMASKED": True},
    {"CHUNK": 256, "WARPS": 2},
]


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("shape", [(4, 64), (3, 100), (6, 1024)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_v4_designs_match_float64_reference(design, shape, dtype):
    fn = lambda inputs: LAB.rmsnorm_triton_v3(inputs, design=design)  # noqa: E731
    result = check(SPEC, fn, shape, dtype, "cpu", seed=5)
    assert result.correct, result.error
    assert result.rel_err < {"float32": 1e-6, "bfloat16": 1e-2}[dtype]


def _launch_args(fn, shape, dtype) -> dict:
    """The constexpr arguments fn's kernel launch received."""
    seen = {}
    real = LAB._rmsnorm_kernel

    class Spy:
        def __getitem__(self, grid):
            def launch(*args, **kw):
                seen.update(kw)
                return real[grid](*args, **kw)

            return launch

    LAB._rmsnorm_kernel = Spy()
    try:
        assert check(SPEC, fn, shape, dtype, "cpu", seed=0).correct
    finally:
        LAB._rmsnorm_kernel = real
    return seen


def test_designs_reach_the_paths_they_claim():
    # otherwise the design tests above could pass on the v3 path alone
    chunked = _launch_args(
        lambda i: LAB.rmsnorm_triton_v3(i, design={"CHUNK": 32}), (2, 100), "float32"
    )
    assert chunked["CHUNKS"] == 4 and chunked["BLOCK_N"] == 32 and not chunked["EVEN"]
    even = _launch_args(lambda i: LAB.rmsnorm_triton_v3(i, design=DESIGNS[0]), (4, 64), "float16")
    assert even["EVEN"] and even["CHUNKS"] == 1


@pytest.mark.parametrize(
    "rows,cols,itemsize,expect",
    [
        (4096, 1024, 2, dict(CHUNK=0, WARPS=4)),  # 2 KB rows: whole, 4 warps
        (4096, 4096, 2, dict(CHUNK=0, WARPS=0)),  # 8 KB: whole rows, launch_config's warps
        (4096, 4096, 4, dict(CHUNK=2048, WARPS=16)),  # 16 KB: two halves at 16 warps
        (2048, 16384, 2, dict(CHUNK=8192, WARPS=16)),
        (16384, 8192, 4, dict(CHUNK=4096, WARPS=16)),
        (32, 16384, 2, dict(CHUNK=0, WARPS=0, UNMASKED=False)),  # decode rows: v3 as it was
    ],
)
def test_v4_table_picks_the_measured_design(rows, cols, itemsize, expect):
    design = LAB.v4_design(rows, cols, itemsize)
    assert {k: design[k] for k in expect} == expect


def test_v4_halves_a_16_kb_row_when_rows_fill_a_wave():
    # 4096 fp32 = 16 KB per row at >= 528 rows: two chunks, unmasked
    got = _launch_args(SPEC.variant("triton").fn, (LAB.FEW_ROWS, 4096), "float32")
    assert got["CHUNKS"] == 2 and got["EVEN"]


def test_poisoned_output_catches_unwritten_rows():
    # a kernel that skips the last row must fail the check, however right the other rows are
    def skips_last_row(inputs):
        short = {**inputs, "x": inputs["x"][:-1], "out": inputs["out"][:-1]}
        LAB.rmsnorm_triton(short)
        return inputs["out"]

    result = check(SPEC, skips_last_row, (4, 64), "float32", "cpu", seed=1)
    assert not result.correct and "non-finite or unwritten" in result.error


def test_wrong_kernel_is_caught():
    result = check(SPEC, lambda i: SPEC.variant("eager").fn(i) * 1.01, (4, 64), "float32", "cpu", 2)
    assert not result.correct and "outside tolerance" in result.error


@pytest.mark.parametrize(
    "n_rows,n_cols,itemsize", [(1, 4096, 2), (4096, 1024, 2), (16384, 8192, 4)]
)
def test_launch_config_covers_whole_rows(n_rows, n_cols, itemsize):
    block_n, rows, warps = LAB.launch_config(n_rows, n_cols, itemsize)
    assert block_n >= n_cols and block_n & (block_n - 1) == 0
    assert rows >= 1 and warps in (1, 2, 4, 8, 16, 32)
