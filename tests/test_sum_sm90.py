"""The tree and the one-pass sum must agree bitwise on the GPU, not only in the interpreter.

The interpreter sums a block with numpy, in one order whatever the launch; compiled, tl.sum's
order follows the register layout (elements per thread, warps). So this records the launches the
host code makes at 2^28 fp32 (meta tensors, no GPU), builds the two kernels that sum the partials
for sm_90 offline with the recorded num_warps and the launcher's integer specialization, and
compares the layouts of their final reductions. Run f648 had the tree's stage 2 at 4 warps and
the one-pass kernel at 16: different results at 2^28 and 2^30.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SOURCE = Path(__file__).resolve().parents[1] / "kernels" / "reduce_sum.py"
PTR = {torch.float32: "*fp32", torch.bfloat16: "*bf16", torch.int32: "*i32"}


class Recorder:
    def __init__(self, kernel, calls):
        self.kernel, self.calls = kernel, calls

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((self.kernel, args, kwargs))


def reduce_layouts(kernel, args, kwargs) -> list[str]:
    """The register layout of each tt.reduce operand in the kernel's sm_90 TTGIR, in order."""
    # imported here, in the child: importing triton before the interpreter tests set
    # TRITON_INTERPRET would give them compiled tl functions
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kwargs = dict(kwargs)
    warps = kwargs.pop("num_warps")
    names = kernel.arg_names
    sig, attrs = {}, {}
    for i, (name, value) in enumerate(zip(names, args, strict=False)):
        if isinstance(value, torch.Tensor):
            sig[name] = PTR[value.dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif value is None:  # the tree's stage 1 passes no OUT/COUNT: constexpr None
            sig[name] = "constexpr"
            kwargs[name] = None
        else:  # the launcher marks integers divisible by 16, unless told not to specialize
            sig[name] = "i32"
            if value % 16 == 0 and name not in kernel.do_not_specialize:
                attrs[(i,)] = [["tt.divisibility", 16]]
    sig.update({k: "constexpr" for k in kwargs})
    source = ASTSource(fn=kernel, signature=sig, constexprs=kwargs, attrs=attrs)
    target = GPUTarget("cuda", 90, 32)
    ttgir = triton.compile(source, target=target, options={"num_warps": warps}).asm["ttgir"]
    layouts = dict(re.findall(r"^(#\w+) = (#ttg\.\w+<.*>)$", ttgir, re.M))
    found = []
    for operand in re.findall(r'"tt\.reduce"\((%\w+)\)', ttgir):
        line = re.search(rf"^\s*{operand} = .*$", ttgir, re.M).group(0)
        found.append(layouts[re.findall(r"(#\w+)>", line)[-1]])
    return found


def layouts_at_2_28(dtype: torch.dtype) -> list[list[str]]:
    """Reduce layouts of the tree's two launches and the one-pass launch for a 2^28 input."""
    spec = importlib.util.spec_from_file_location("reduce_sum_sm90", SOURCE)
    lab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab)
    calls = []
    for name in ("_chunk_sum_kernel", "_finalize_kernel"):
        setattr(lab, name, Recorder(getattr(lab, name), calls))
    x = torch.empty(1 << 28, dtype=dtype, device="meta")
    inputs = {"x": x, "out": torch.empty((), device="meta")}
    lab.sum_tree(inputs)
    lab.sum_onepass(inputs)
    names = [(c[0].fn.__name__, c[2].get("ONEPASS")) for c in calls]
    stage1, stage2 = ("_chunk_sum_kernel", False), ("_finalize_kernel", None)
    assert names == [stage1, stage2, ("_chunk_sum_kernel", True)], names
    return [reduce_layouts(*c) for c in calls]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tree_and_onepass_sum_their_partials_in_the_same_order(dtype):
    # in a child process: compiled kernels there, and the interpreter tests' modules (and
    # Triton's interpreter state) here stay untouched
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    env["PYTHONPATH"] = os.pathsep.join([str(SOURCE.parents[1]), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, __file__, dtype]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode == 3:  # no offline sm_90 toolchain here
        pytest.skip(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    stage1, stage2, onepass = json.loads(proc.stdout)
    # the partial over a program's lanes, then the sum over the row's partials
    assert len(onepass) == 2 and stage1 + stage2 == onepass


if __name__ == "__main__":
    try:
        result = layouts_at_2_28(getattr(torch, sys.argv[1]))
    except (RuntimeError, FileNotFoundError) as exc:
        print(f"offline sm_90 build unavailable: {exc}")
        sys.exit(3)
    print(json.dumps(result))
