"""Compile the zoo's kernels for sm_90 without a GPU and print what the H200 would run: registers
per thread, spilled bytes, resident blocks per SM, and the SASS instructions that carry each
kernel's cause (counts of the opcodes named). It checks each design before any device time: the
one-warp row spills and the eight-warp one does not, a tail tile fits one block per SM, the int8
GEMM issues IMMA/wgmma, the hash stays on 32-bit ALU ops, the XU chain is MUFU.

    TRITON_INTERPRET= PYTHONPATH=. python3 zoo/sm90_check.py

Triton kernels through tools/sm90_compile.py's compile_sm90; the CUDA ones through nvcc (-cubin,
sm_90), where nvcc is installed.
"""

from __future__ import annotations

import collections
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.sm90_compile import TOOLS, compile_sm90, usage  # noqa: E402

REGS_PER_SM, THREADS_PER_SM, BLOCKS_PER_SM = 65536, 2048, 32


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"zoo_sm90_{name}", ROOT / "zoo" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sass_ops(cubin: bytes) -> collections.Counter:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run(
            [TOOLS / "cuobjdump", "-sass", f.name], capture_output=True, text=True, check=True
        ).stdout
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", text)
    return collections.Counter(op.split(".")[0] for op in ops)


def blocks_per_sm(regs: int, warps: int, smem: int = 0) -> int:
    threads = 32 * warps
    by_regs = REGS_PER_SM // max(1, -(-regs * threads // 256) * 256)
    by_smem = (233472 // smem) if smem else BLOCKS_PER_SM
    return min(by_regs, THREADS_PER_SM // threads, by_smem, BLOCKS_PER_SM)


P32, I32 = "*fp32", "i32"
WATCH = (
    *("FFMA", "DFMA", "MUFU", "LOP3", "SHF", "IADD3", "IMAD", "LDL", "STL", "LDG", "STG"),
    *("REDG", "ATOMG", "HGMMA", "IGMMA", "HMMA", "IMMA", "LDS", "STS", "BRA", "BSSY"),
    *("MEMBAR", "FENCE", "BAR", "SHFL", "F2FP"),
)


def triton_jobs():
    m, a, c, t, s, x = (_module(n) for n in ("memory", "atomics", "compute", "tensor", "shape",
                                              "memory"))  # fmt: skip
    sig = lambda *names: dict(names)  # noqa: E731
    yield "zoo_stream scale", m._scale_kernel, sig(("X", P32), ("Y", P32), ("n", I32)), {
        "BLOCK": 2048}, 4, 3  # fmt: skip
    yield "zoo_l2_bound", m._l2_reread_kernel, sig(("T", P32), ("Y", P32), ("n_blocks", I32)), {
        "REUSE": 64, "BLOCK": 1024}, 4, 3  # fmt: skip
    yield "zoo_l2_reuse", m._two_pass_kernel, sig(("X", P32), ("Y", P32), ("n_cols", I32),
        ("eps", "fp32")), {"BLOCK": 2048}, 8, 3  # fmt: skip
    yield "zoo_l1_bound", m._l1_reread_kernel, sig(("X", P32), ("Y", P32)), {
        "REUSE": 256, "WINDOW": 2048, "BLOCK": 1024}, 4, 3  # fmt: skip
    yield "zoo_latency", m._chase_kernel, sig(("NXT", "*i32"), ("START", "*i32"), ("OUT", "*i32"),
        ("steps", I32)), {"LANES": 32}, 1, 3  # fmt: skip
    yield "zoo_strided", m._strided_kernel, sig(("X", P32), ("Y", P32), ("n", I32)), {
        "STRIDE": 16, "BLOCK": 1024}, 4, 3  # fmt: skip
    yield "zoo_gather w1", m._gather_kernel, sig(("X", P32), ("IDX", "*i32"), ("Y", P32),
        ("n_idx", I32)), {"WIDTH": 1, "ROWS": 1024}, 4, 3  # fmt: skip
    yield "zoo_gather w64", m._gather_kernel, sig(("X", P32), ("IDX", "*i32"), ("Y", P32),
        ("n_idx", I32)), {"WIDTH": 64, "ROWS": 16}, 4, 3  # fmt: skip
    for w in (1, 16):
        yield f"zoo_spills {w} warp(s)", m._row_norm_kernel, sig(("X", P32), ("Y", P32),
            ("n_cols", I32), ("eps", "fp32")), {"BLOCK": 16384}, w, 3  # fmt: skip
    yield "zoo_atomics contended", a._hist_contended_kernel, sig(("X", P32), ("H", "*i32"),
        ("n", I32)), {"BINS": 4, "BLOCK": 1024}, 4, 3  # fmt: skip
    yield "zoo_atomics privatized", a._hist_private_kernel, sig(("X", P32), ("H", "*i32"),
        ("n", I32)), {"BINS": 4, "BLOCK": 4096}, 8, 3  # fmt: skip
    for dt in ("fp32", "fp64"):
        yield f"zoo_fma {dt}", c._fma_chain_kernel, sig(("X", f"*{dt}"), ("AB", f"*{dt}"),
            ("Y", f"*{dt}"), ("n", I32), ("iters", I32)), {"BLOCK": 1024}, 4, 3  # fmt: skip
    yield "zoo_int_alu", c._xorshift_kernel, sig(("X", P32), ("Y", "*i32"), ("n", I32),
        ("iters", I32)), {"BLOCK": 1024}, 4, 3  # fmt: skip
    yield "zoo_xu", c._xu_kernel, sig(("X", P32), ("Y", P32), ("n", I32), ("iters", I32)), {
        "BLOCK": 1024}, 4, 3  # fmt: skip
    yield "zoo_issue", c._mix_kernel, sig(("X", P32), ("Y", P32), ("n", I32), ("iters", I32)), {
        "BLOCK": 256}, 8, 3  # fmt: skip
    for dt, acc, bk, pieces in (("bf16", "*bf16", 64, 2), ("i8", "*i32", 128, 4)):
        yield f"zoo_gemm {dt}", t._gemm_kernel, sig(("A", f"*{dt}"), ("BT", f"*{dt}"),
            ("C", acc), ("M", I32), ("N", I32), ("K", I32)), {"BM": 128, "BN": 256, "BK": bk,
            "GROUP_M": 8, "PROGRAMS": 132, "PIECES": pieces, "WIDEN": False}, 8, 3  # fmt: skip
    yield "zoo_tail", s._tile_fma_kernel, sig(("X", P32), ("Y", P32), ("iters", I32)), {
        "TILE": 32768}, 32, 3  # fmt: skip
    yield "zoo_small_grid", s._row_sum_kernel, sig(("X", P32), ("Y", P32), ("n_cols", I32)), {
        "BLOCK": 4096}, 8, 3  # fmt: skip
    del x
    launch = _module("launch")
    for block, w in ((32, 1), (4096, 4)):
        yield f"zoo_tiny_programs {block}", launch._affine_kernel, sig(("X", P32), ("Y", P32),
            ("n", I32)), {"BLOCK": block}, w, 3  # fmt: skip
    yield "zoo_scatter zero", launch._zero_kernel, sig(("Y", P32), ("n", I32)), {
        "BLOCK": 4096}, 4, 3  # fmt: skip
    yield "zoo_scatter scatter", launch._scatter_add_kernel, sig(("V", P32), ("IDX", "*i32"),
        ("Y", P32), ("n", I32)), {"BLOCK": 1024}, 4, 3  # fmt: skip
    for relaxed in (False, True):
        yield f"zoo_atomic_order {'relaxed' if relaxed else 'acq_rel'}", a._accumulate_kernel, sig(
            ("X", P32), ("OUT", P32), ("n", I32)), {"BINS": 1 << 20, "BLOCK": 1024,
            "RELAXED": relaxed}, 4, 3  # fmt: skip
    gemm_args = lambda dt: sig(("A", dt), ("BT", dt), ("C", dt), ("M", I32), ("N", I32),  # noqa: E731
                               ("K", I32))  # fmt: skip
    for label, dt, (bm, bn, bk, w, st, prec) in (
        ("zoo_gemm_spill 256x256", "*bf16", (256, 256, 64, 4, 3, "tf32")),
        ("zoo_gemm_spill 128x256", "*bf16", (128, 256, 64, 8, 3, "tf32")),
        ("zoo_gemm_fp32 ieee", P32, (128, 128, 32, 8, 3, "ieee")),
        ("zoo_gemm_fp32 tf32", P32, (128, 128, 32, 8, 3, "tf32")),
    ):
        yield label, t._tile_gemm_kernel, gemm_args(dt), {"BM": bm, "BN": bn, "BK": bk,
            "PRECISION": prec, "WIDEN": False}, w, st  # fmt: skip


def report(label: str, regs: int, spill: int, warps: int, smem: int, ops) -> None:
    seen = " ".join(f"{op}:{ops[op]}" for op in WATCH if ops.get(op))
    print(f"{label:26} regs {regs:3} spill {spill:6} B  warps {warps:2}  smem {smem:6}  "
          f"blocks/SM {blocks_per_sm(regs, warps, smem):2} | {seen}")  # fmt: skip


def cuda_jobs():
    if not shutil.which("nvcc"):
        print("nvcc not found: the CUDA kernels (zoo/cuda.py) are not checked")
        return
    cuda = _module("cuda")
    sources = [
        ("zoo_bank conflicted", cuda._TRANSPOSE.replace("COLS", "64"), 8),
        ("zoo_bank padded", cuda._TRANSPOSE.replace("COLS", "65"), 8),
        ("zoo_divergence divergent", cuda._TRIPS.replace("ORDERED", "0"), 8),
        ("zoo_divergence sorted", cuda._TRIPS.replace("ORDERED", "1"), 8),
        ("zoo_smem_occupancy 48k", cuda._STAGE.replace("CHUNK", "3072"), 4),
        ("zoo_smem_occupancy 8k", cuda._STAGE.replace("CHUNK", "512"), 4),
        ("zoo_barrier syncthreads", cuda._ROTATE.replace("MODE", "0"), 8),
        ("zoo_barrier shuffle", cuda._ROTATE.replace("MODE", "1"), 8),
    ]
    for label, source, warps in sources:
        with tempfile.TemporaryDirectory() as d:
            cu, cubin = Path(d) / "k.cu", Path(d) / "k.cubin"
            cu.write_text(source)
            subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", cubin, cu], check=True)
            out = subprocess.run([TOOLS / "cuobjdump", "--dump-resource-usage", cubin],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            regs = int(re.search(r"REG:(\d+)", out).group(1))
            spill = sum(int(v) for v in re.findall(r"(?:STACK|LOCAL):(\d+)", out))
            smem = int(re.search(r"SHARED:(\d+)", out).group(1))
            report(label, regs, spill, warps, smem, sass_ops(cubin.read_bytes()))


def main() -> None:
    for label, fn, args, const, warps, stages in triton_jobs():
        try:
            kernel = compile_sm90(fn, args, const, warps, stages)
        except Exception as exc:  # one kernel's failure is its own line
            print(f"{label:26} FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        regs, spill = usage(kernel)
        smem = int(kernel.metadata.shared)
        report(label, regs, spill, warps, smem, sass_ops(kernel.asm["cubin"]))
    cuda_jobs()


if __name__ == "__main__":
    main()
