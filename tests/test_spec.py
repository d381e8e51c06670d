"""Kernel specs: shapes, dtype names, lookup errors, user files, the RMSNorm entry's model."""

import pytest

from profkit.errors import ProfkitError
from profkit.spec import case_name, find_spec, format_shape, lab_specs, normalize_dtype, parse_shape


def test_parse_shape_round_trip():
    assert parse_shape("4096x8192") == (4096, 8192)
    assert parse_shape("1X4096") == (1, 4096)
    assert format_shape((4096, 8192)) == "4096x8192"


@pytest.mark.parametrize("bad", ["", "4096", "x8192", "4096x", "4096*8192", "0x10", "-1x4", "axb"])
def test_malformed_shapes_are_errors(bad):
    if bad == "4096":  # a 1-D shape is well-formed; the kernel decides if it fits
        assert parse_shape(bad) == (4096,)
        return
    with pytest.raises(ProfkitError, match="malformed shape"):
        parse_shape(bad)


@pytest.mark.parametrize(
    "text,shape", [("16777216", (16777216,)), ("4096x14336x4096", (4096, 14336, 4096))]
)
def test_one_and_three_dimensional_shapes(text, shape):
    # vector_add and sum take 1-D shapes, matmul MxNxK: parsed, named and modelled alike
    assert parse_shape(text) == shape and format_shape(shape) == text
    kernel = "vector_add" if len(shape) == 1 else "matmul"
    assert case_name(kernel, "triton", "bfloat16", shape) == f"{kernel}.triton.bfloat16.{text}"
    assert find_spec(kernel).bytes_moved(shape, 2) > 0


def test_dtype_aliases_and_unsupported():
    spec = find_spec("rmsnorm")
    assert normalize_dtype(spec, "bf16") == "bfloat16"
    assert normalize_dtype(spec, "float16") == "float16"
    with pytest.raises(ProfkitError, match="supported: float16, bfloat16, float32"):
        normalize_dtype(spec, "int8")


def test_unknown_kernel_lists_known():
    known = "add_rmsnorm, decode, matmul, matmul_fp8, rmsnorm, softmax, sum, swiglu, vector_add"
    with pytest.raises(ProfkitError, match=f"known: {known}"):
        find_spec("nope")


def test_unknown_variant_lists_known():
    with pytest.raises(ProfkitError, match="known: triton, eager, native, compile"):
        find_spec("rmsnorm").variant("cuda")


def test_case_name_has_no_slash():
    name = case_name("rmsnorm", "triton", "float16", (4096, 8192))
    assert name == "rmsnorm.triton.float16.4096x8192" and "/" not in name


def test_lab_is_not_importable_as_kernels():
    specs = lab_specs()
    assert "rmsnorm" in specs
    import sys

    assert "kernels" not in sys.modules and "profkit_lab.rmsnorm" in sys.modules


def test_rmsnorm_spec_declares_the_sweep_and_model():
    spec = find_spec("rmsnorm")
    assert {v.name for v in spec.variants if v.baseline} == {"eager", "native", "compile", "liger"}
    # triton: the current version (v4); triton_v2 and triton_v3 kept beside it
    names = [v.name for v in spec.variants if not v.baseline]
    assert names == ["triton", "triton_v2", "triton_v3"]
    assert (4096, 4096) in spec.shapes and (4096, 8192) in spec.shapes
    hidden = {s[1] for s in spec.shapes}
    assert min(hidden) == 1024 and max(hidden) == 16384
    assert any(s[0] <= 32 for s in spec.shapes)  # decode-like
    # read x and w once, write y once: 2*M*N + N elements
    assert spec.bytes_moved((4096, 8192), 2) == (2 * 4096 * 8192 + 8192) * 2
    assert set(spec.tolerances) == set(spec.dtypes)


def test_user_file_spec(tmp_path):
    f = tmp_path / "my_kernels.py"
    f.write_text(
        "from profkit.spec import KernelSpec, Variant\n"
        "import torch\n"
        "def scale(i): return i['x'] * 2\n"
        "MY = KernelSpec(name='scale2', description='x*2', variants=(Variant('torch', scale),),\n"
        "    make_inputs=lambda s, d, dev, g: {'x': torch.randn(s, generator=g, device=dev)\n"
        "        .to(getattr(torch, d))},\n"
        "    reference=lambda i: i['x'].double() * 2, dtypes=('float32',), shapes=((8, 8),),\n"
        "    tolerances={'float32': (1e-6, 1e-6)}, bytes_moved=lambda s, e: 2 * s[0] * s[1] * e,\n"
        "    flops=lambda s: s[0] * s[1])\n"
    )
    spec = find_spec("scale2", f)
    assert spec.source == str(f) and spec.variants[0].name == "torch"
    with pytest.raises(ProfkitError, match="unknown kernel 'rmsnorm' in"):
        find_spec("rmsnorm", f)


def test_user_file_errors_are_one_line(tmp_path):
    with pytest.raises(ProfkitError, match="no such kernel file"):
        find_spec("x", tmp_path / "missing.py")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ProfkitError, match="could not import .*RuntimeError: boom"):
        find_spec("x", broken)


def test_an_unknown_lab_kernel_is_named_before_any_lab_module_is_imported(monkeypatch) -> None:
    """Without torch a capture of a misspelled kernel must say the name is unknown, not that
    some other lab module failed to import."""
    from profkit import spec as spec_module

    def no_import(*args, **kwargs):
        raise AssertionError("imported a lab module")

    monkeypatch.setattr(spec_module, "lab_specs", no_import)
    with pytest.raises(ProfkitError, match="unknown kernel 'nosuch' in the lab; known: .*rmsnorm"):
        spec_module.find_spec("nosuch")
