"""Compile the lab's RMSNorm kernel for sm_90 without a GPU (Triton's own ptxas and nvdisasm) and
print its registers and memory/sync instructions: what the notebook's SASS questions ask.

XX
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from profkit.spec import DTYPE_ITEMSIZE, find_spec

dtype = sys.argv[1] if len(sys.argv) > 1 else "float16"
n_cols = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
# third argument: v3 (the lab's kernel, variant triton) or v2 (variant triton_v2)
w_early = (sys.argv[3] if len(sys.argv) > 3 else "v3") == "v3"  # v2: w loaded after the reduction
find_spec("rmsnorm")
lab = importlib.import_module("profkit_lab.rmsnorm")
_, const, warps = lab.plan(4096, n_cols, DTYPE_ITEMSIZE[dtype], {"W_EARLY": w_early})
ptr = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32"}[dtype]
signature = {
    "X": ptr,
    "W": ptr,
    "Y": ptr,
    "n_rows": "i32",
    "n_cols": "i32",
    "stride_x": "i32",
    "stride_y": "i32",
    "eps": "fp32",
    **{k: "constexpr" for k in const},
}
# what the launcher specializes at run time: 16-byte-aligned pointers, sizes divisible by 16
aligned = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 4, 5, 6)}
source = ASTSource(
    fn=lab._rmsnorm_kernel,
    signature=signature,
    constexprs=const,
    attrs=aligned,
)
kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
    cubin.write(kernel.asm["cubin"])
    cubin.flush()
    usage = subprocess.run(
        [tools / "cuobjdump", "--dump-resource-usage", cubin.name],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sass = subprocess.run(
        [tools / "nvdisasm", "-c", cubin.name], capture_output=True, text=True, check=True
    ).stdout
version = "v3" if w_early else "v2"
print(f"{dtype} N={n_cols} {version}: {const} num_warps={warps}")
print(re.search(r"REG:\d+.*?LOCAL:\d+", usage).group(0))
for line in sass.splitlines():
    if re.search(r"\b(LDG|STG|BAR|SHFL|LDS|STS)\b", line):
        print(re.sub(r"\s+", " ", line.split(";")[0]).strip())
