"""Compile the lab's Triton kernels for sm_90 without a GPU and print what the H200 would load.

    PYTHONPATH=. python3 tools/sm90_compile.py [KERNEL ...]     (default: all of them)

For every configuration the kernels' launch heuristics pick over their default sweeps, this
compiles with Triton's own ptxas and prints registers per thread, spilled bytes (STACK + LOCAL),
shared memory (dynamic, from Triton's metadata) against the H200's 227 KB per block, and the
resident blocks per SM that registers and shared memory allow. It catches a configuration that
cannot launch (too much shared memory) or spills before any GPU time is spent. It also compiles
the persistent matmul with and without warp_specialize=True and says whether the PTX differs.
Run it with TRITON_INTERPRET unset.
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

SMEM_PER_BLOCK = 232448  # 227 KB: sm_90's opt-in maximum per block
REGS_PER_SM = 65536
PTR = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32"}
TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


def compile_sm90(fn, args: dict[str, str], constexprs: dict, warps: int, stages: int = 3):
    # in the kernel's argument order (a pointer may be passed as a constexpr None)
    signature = {n: "constexpr" if n in constexprs else args[n] for n in fn.arg_names}
    # what the launcher specializes at run time: 16-byte-aligned pointers, sizes divisible by 16
    runtime = enumerate(fn.arg_names)
    aligned = {(i,): [["tt.divisibility", 16]] for i, n in runtime if n not in constexprs}
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=aligned)
    options = {"num_warps": warps, "num_stages": stages}
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)


def usage(kernel) -> tuple[int, int]:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(kernel.asm["cubin"])
        cubin.flush()
        out = subprocess.run(
            [TOOLS / "cuobjdump", "--dump-resource-usage", cubin.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    # ptxas puts spilled registers on the STACK (frame), not in LOCAL: count both (a maxnreg
    # build that spilled read LOCAL:0 STACK:160 and had STL/LDL in its SASS)
    m = re.search(r"REG:(\d+) STACK:(\d+).*?LOCAL:(\d+)", out)
    return int(m.group(1)), int(m.group(2)) + int(m.group(3))


def lab(module: str, kernel: str | None = None):
    find_spec(kernel or module)
    return sys.modules[f"profkit_lab.{module}"]


def jobs_vector_add():
    mod, spec = lab("vector_add"), find_spec("vector_add")
    for dtype in spec.dtypes:
        for (n,) in spec.shapes:
            block, warps = mod.launch_config(n, DTYPE_ITEMSIZE[dtype])
            args = {"X": PTR[dtype], "Y": PTR[dtype], "OUT": PTR[dtype], "n": "i32"}
            const = {"BLOCK": block}
            yield f"{dtype} {const} w{warps}", mod._add_kernel, args, const, warps, 3


def jobs_sum():
    mod, spec = lab("reduce_sum", "sum"), find_spec("sum")
    for dtype in spec.dtypes:
        for shape in spec.shapes:
            rows, cols = mod._rows_cols(shape)
            block, splits, warps = mod.launch_config(rows, cols, DTYPE_ITEMSIZE[dtype])
            whole = mod.whole_blocks(warps)
            args = {"X": PTR[dtype], "P": "*fp32", "OUT": "*fp32", "COUNT": "*i32"}
            args |= {"cols": "i32", "stride_row": "i32", "chunk": "i32"}
            for il in (True, False):  # stage 1's block order: interleaved, contiguous chunks
                const = {"BLOCK": block, "INTERLEAVE": il, "WHOLE": whole}
                chunk = mod._chunk_sum_kernel
                tree = {**const, "BLOCK_S": 1, "ONEPASS": False, "OUT": None, "COUNT": None}
                yield f"chunk {dtype} {const}", chunk, args, tree, warps, 3
                onepass = {**const, "BLOCK_S": triton.next_power_of_2(splits), "ONEPASS": True}
                yield f"onepass {dtype} {onepass}", chunk, args, onepass, warps, 3
            atomic = {"X": PTR[dtype], "OUT": "*fp32", "cols": "i32", "stride_row": "i32"}
            yield (
                f"atomic {dtype} BLOCK={block} ATOMIC={splits > 1}",
                mod._atomic_sum_kernel,
                atomic,
                {"BLOCK": block, "WHOLE": mod.whole_blocks(warps), "ATOMIC": splits > 1},
                warps,
                3,
            )


def jobs_softmax():
    mod, spec = lab("softmax"), find_spec("softmax")
    for dtype in spec.dtypes:
        for rows, cols in spec.shapes:
            cfg = mod.launch_config(rows, cols, DTYPE_ITEMSIZE[dtype])
            if isinstance(cfg, mod.Rows):
                args = {"X": PTR[dtype], "Y": PTR[dtype], "n_rows": "i32", "n_cols": "i32"}
                args |= {"stride_x": "i32", "stride_y": "i32"}
                const = {"BLOCK_N": cfg.block_n, "ROWS": cfg.rows}
                yield f"rows {dtype} {const}", mod._softmax_rows_kernel, args, const, cfg.warps, 3
            else:
                args = {"X": PTR[dtype], "Y": PTR[dtype], "STATS": "*fp32", "COUNT": "*i32"}
                args |= {"n_cols": "i32", "stride_x": "i32", "stride_y": "i32"}
                const = {"BLOCK": cfg.block, "S": cfg.splits, "MODE": 0, "MAX_SPINS": 1 << 16}
                fn = mod._softmax_rowsplit_kernel
                yield f"rowsplit {dtype} {const}", fn, args, const, cfg.warps, 3


def jobs_rmsnorm():
    mod, spec = lab("rmsnorm"), find_spec("rmsnorm")
    for dtype in spec.dtypes:
        for rows, cols in spec.shapes:
            args = {"X": PTR[dtype], "W": PTR[dtype], "Y": PTR[dtype], "n_rows": "i32"}
            args |= {"n_cols": "i32", "stride_x": "i32", "stride_y": "i32", "eps": "fp32"}
            itemsize = DTYPE_ITEMSIZE[dtype]
            # v3 (triton_v3), v2 (triton_v2), v4 (variant triton)
            for design in ({}, {"W_EARLY": False}, mod.v4_design(rows, cols, itemsize)):
                _, const, warps = mod.plan(rows, cols, itemsize, design)
                label = f"{dtype} B{const['BLOCK_N']}x{const['CHUNKS']} r{const['ROWS']} "
                label += f"early={const['W_EARLY']} even={const['EVEN']}"
                yield label, mod._rmsnorm_kernel, args, const, warps, 3


def jobs_swiglu():
    mod, spec = lab("swiglu"), find_spec("swiglu")
    for dtype in spec.dtypes:
        for rows, cols in spec.shapes:
            cfg = mod.launch_config(rows * cols)
            args = {"A": PTR[dtype], "B": PTR[dtype], "Y": PTR[dtype], "n": "i32"}
            const = {"BLOCK": cfg.block, "EVEN": rows * cols % cfg.block == 0}
            yield f"{dtype} {const} w{cfg.warps}", mod._swiglu_kernel, args, const, cfg.warps, 3


def jobs_add_rmsnorm():
    mod, spec = lab("add_rmsnorm"), find_spec("add_rmsnorm")
    for dtype in spec.dtypes:
        for rows, cols in spec.shapes:
            cfg = mod.launch_config(rows, cols, DTYPE_ITEMSIZE[dtype])
            args = {n: PTR[dtype] for n in ("X", "R", "W", "H", "Y")}
            args |= {"n_rows": "i32", "n_cols": "i32", "eps": "fp32"}
            even = cols == cfg.block_n * cfg.chunks and rows % cfg.rows == 0
            const = {"BLOCK_N": cfg.block_n, "ROWS": cfg.rows, "CHUNKS": cfg.chunks, "EVEN": even}
            label = f"{dtype} B{cfg.block_n}x{cfg.chunks} r{cfg.rows} even={even}"
            yield label, mod._add_rmsnorm_kernel, args, const, cfg.warps, 3


def _tiled_job(mod, dtype, shape, cfg):
    m, n, k = shape
    args = {"A": PTR[dtype], "B": PTR[dtype], "C": PTR[dtype], "M": "i32", "N": "i32"}
    args |= {"K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    even = m % cfg.bm == 0 and n % cfg.bn == 0 and k % cfg.bk == 0
    const = dict(BM=cfg.bm, BN=cfg.bn, BK=cfg.bk, GROUP_M=cfg.group_m, EVEN=even, WIDEN=False)
    label = f"tiled {dtype} {cfg.bm}x{cfg.bn}x{cfg.bk} s{cfg.stages} w{cfg.warps}"
    return label, mod._matmul_tiled_kernel, args, const, cfg.warps, cfg.stages


def _persistent_job(mod, dtype, cfg, fp8=False):
    ptr = "*fp8e4nv" if fp8 else PTR[dtype]
    args = {"A": ptr, "B": ptr, "C": "*bf16" if fp8 else PTR[dtype], "M": "i32", "N": "i32"}
    args |= {"K": "i32"}
    const = dict(BM=cfg.bm, BN=cfg.bn, BK=cfg.bk, GROUP_M=cfg.group_m, NUM_PROGRAMS=mod.SMS)
    const |= dict(SUBTILE=cfg.subtile, WS=False, WIDEN=False, B_KMAJOR=fp8)
    if fp8:
        args |= {"SA": "*fp32", "SB": "*fp32"}
    else:
        const |= {"SA": None, "SB": None}
    label = f"persistent {'fp8' if fp8 else dtype} {cfg.bm}x{cfg.bn}x{cfg.bk} s{cfg.stages}"
    label += f" w{cfg.warps} sub{cfg.subtile}"
    return label, mod._matmul_persistent_kernel, args, const, cfg.warps, cfg.stages


def jobs_matmul():
    mod, spec = lab("matmul"), find_spec("matmul")
    for dtype in spec.dtypes:
        for shape in spec.shapes:
            yield _tiled_job(mod, dtype, shape, mod.launch_config(*shape))
            yield _persistent_job(mod, dtype, mod.launch_config(*shape, True))
    for shape in find_spec("matmul_fp8").shapes:
        yield _persistent_job(mod, "fp8", mod.launch_config_fp8(*shape), fp8=True)


def warp_specialize_check() -> str:
    """Does tl.range(warp_specialize=True) change the sm_90 persistent matmul?"""
    mod = lab("matmul")
    args = {"A": "*bf16", "B": "*bf16", "C": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    ptx = {}
    for ws in (False, True):
        const = dict(BM=128, BN=256, BK=64, GROUP_M=8, NUM_PROGRAMS=132, SUBTILE=2, WS=ws)
        const |= dict(WIDEN=False, B_KMAJOR=False, SA=None, SB=None)
        ptx[ws] = compile_sm90(mod._matmul_persistent_kernel, args, const, 8, 3).asm["ptx"]
    verdict = "identical" if ptx[False] == ptx[True] else "DIFFERS"
    return f"warp_specialize=True on sm_90 (persistent bf16 128x256x64): PTX {verdict}"


def jobs_decode_attention():
    """The decode step's flash-decoding split kernel at head_dim 128: launch_config's tile and
    bench/probe_attn5.py's bn32 candidate, and the combine kernel."""
    lab("decode")
    mod = importlib.import_module("profkit_lab._decode_attention")
    for dtype in ("bfloat16", "float16"):
        args = {n: "i32" for n in mod._split_kernel.arg_names}
        args |= {"Q": PTR[dtype], "K": PTR[dtype], "V": PTR[dtype], "POS": "*i64"}
        args |= {"M": "*fp32", "L": "*fp32", "ACC": "*fp32", "scale_log2": "fp32"}
        args |= {"OUT": PTR[dtype]}
        for block_n, direct in ((64, False), (64, True), (32, False)):
            _, _, warps, stages = mod.launch_config(1, 32, 2064, 128, block_n=block_n)
            const = {"D": 128, "BLOCK_D": 128, "BLOCK_N": block_n, "DIRECT": direct}
            label = f"{dtype} split BLOCK_N {block_n} direct={direct}"
            yield label, mod._split_kernel, args, const, warps, stages
        args = {n: "i32" for n in mod._combine_kernel.arg_names}
        args |= {"M": "*fp32", "L": "*fp32", "ACC": "*fp32", "POS": "*i64", "OUT": PTR[dtype]}
        const = {"BLOCK_S": 32, "D": 128, "BLOCK_D": 128}
        yield f"{dtype} combine BLOCK_S 32", mod._combine_kernel, args, const, 4, 3


JOBS = {
    "decode_attention": jobs_decode_attention,
    "vector_add": jobs_vector_add,
    "sum": jobs_sum,
    "softmax": jobs_softmax,
    "rmsnorm": jobs_rmsnorm,
    "swiglu": jobs_swiglu,
    "add_rmsnorm": jobs_add_rmsnorm,
    "matmul": jobs_matmul,
}


def main(names: list[str]) -> int:
    bad = 0
    print(f"{'kernel':<11} {'configuration':<58} {'regs':>4} {'spill':>5} {'smem':>7} blocks/SM")
    for name in names or list(JOBS):
        seen = set()
        for label, fn, args, const, warps, stages in JOBS[name]():
            key = (fn.__name__, tuple(args.values()), tuple(sorted(const.items())), warps, stages)
            if key in seen:
                continue
            seen.add(key)
            kernel = compile_sm90(fn, args, const, warps, stages)
            regs, spill = usage(kernel)
            smem = kernel.metadata.shared
            by_regs = REGS_PER_SM // max(1, regs * 32 * warps)
            by_smem = 228 * 1024 // smem if smem else 32
            fits = smem <= SMEM_PER_BLOCK and by_regs >= 1
            bad += not fits or spill > 0
            flag = "  <-- cannot launch" if not fits else "  <-- spills" if spill else ""
            print(
                f"{name:<11} {label[:58]:<58} {regs:>4} {spill:>5} {smem:>7} "
                f"{min(by_regs, by_smem, 32)}{flag}"
            )
    if not names or "matmul" in names:
        print(warp_specialize_check())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
