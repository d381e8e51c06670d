"""Build the sum's stage-1 kernels for sm_90 offline at a real launch and compare their loops.

    PYTHONPATH=$PWD python3 bench/sum_sass.py [N] [DTYPE] [--whole 0|1] [--dump DIR] [-v]
    (default: 2^30 float32, the shipped loop)

Records the launches sum_tree and sum_onepass make for a 1-D input of N elements (meta tensors,
no GPU), compiles each with the recorded num_warps and the launcher's integer specialization
(as tests/test_sum_sm90.py does), and prints per kernel: registers, and the streaming loop (the
SASS block that branches back to itself and holds the LDGs): its instruction count, LDGs, and
the most LDGs a thread has issued and not yet read. Last line: whether the tree's stage-1 loop
and the one-pass kernel's are the same instruction sequence (registers and addresses
normalised), and their (instructions, LDGs, in flight); exit 1 if those differ. -v prints the
loops; --whole 0 builds the masked loop (the run-4f4876 kernels). Run with TRITON_INTERPRET
unset.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

ROOT = Path(__file__).resolve().parents[1]
PTR = {torch.float32: "*fp32", torch.bfloat16: "*bf16", torch.int32: "*i32"}
TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


class Recorder:
    def __init__(self, kernel, calls):
        self.kernel, self.calls = kernel, calls

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((self.kernel, grid, args, kwargs))


def build(kernel, args, kwargs):
    kwargs = dict(kwargs)
    warps = kwargs.pop("num_warps")
    sig, attrs, const = {}, {}, dict(kwargs)
    for i, (name, value) in enumerate(zip(kernel.arg_names, args, strict=False)):
        if isinstance(value, torch.Tensor):
            sig[name] = PTR[value.dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif value is None:  # an unused pointer (the tree passes no OUT/COUNT): a constexpr
            sig[name], const[name] = "constexpr", None
        elif value == 1 and name not in kernel.do_not_specialize:  # the launcher's constant 1
            sig[name], const[name] = "constexpr", 1
        else:  # integers divisible by 16 are marked so, unless told not to specialize
            sig[name] = "i32"
            if value % 16 == 0 and name not in kernel.do_not_specialize:
                attrs[(i,)] = [["tt.divisibility", 16]]
    sig.update({k: "constexpr" for k in kwargs})
    source = ASTSource(fn=kernel, signature=sig, constexprs=const, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})


def sass_of(kernel) -> tuple[str, str]:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(kernel.asm["cubin"])
        cubin.flush()
        sass = (
            subprocess.run(
                [TOOLS / "nvdisasm", "-c", "-g", cubin.name], capture_output=True, text=True
            ).stdout
            or subprocess.run(
                [TOOLS / "nvdisasm", "-c", cubin.name], capture_output=True, text=True, check=True
            ).stdout
        )
        usage = subprocess.run(
            [TOOLS / "cuobjdump", "--dump-resource-usage", cubin.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return sass, re.search(r"REG:\d+.*?LOCAL:\d+", usage).group(0)


def instructions(sass: str) -> list[tuple[str, str]]:
    """(label-or-'', instruction text) in order."""
    out, label = [], ""
    for line in sass.splitlines():
        m = re.match(r"^\.(L_x_\d+):", line.strip())
        if m:
            label = m.group(1)
            continue
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(.*?);", line)
        if m:
            out.append((label, m.group(1).strip()))
            label = ""
    return out


def streaming_loop(sass: str) -> list[str]:
    """The loop block holding the LDGs: from a label to the branch back to it."""
    ins = instructions(sass)
    best = []
    for i, (label, _) in enumerate(ins):
        if not label:
            continue
        for j in range(i, len(ins)):
            if re.search(rf"\bBRA\b.*`?\(?\.{label}\)?", ins[j][1]):
                body = [t for _, t in ins[i : j + 1]]
                if any("LDG" in t for t in body) and (not best or len(body) < len(best)):
                    best = body
                break
    return best


def loads_in_flight(loop: list[str]) -> int:
    """Most LDGs of one iteration issued and not yet read (a load retires at the first
    instruction that reads one of its destination registers)."""
    pending, most = [], 0
    for text in loop:
        op, _, operands = text.partition(" ")
        if "LDG" in op or (op.startswith("@") and "LDG" in operands):
            pending = [p for p in pending if p]
            dest = int(re.search(r"LDG\S*\s+R(\d+)", text).group(1))
            width = 4 if ".128" in text else 2 if ".64" in text else 1
            pending.append(set(range(dest, dest + width)))
            most = max(most, len(pending))
            continue
        read = {int(r) for r in re.findall(r"\bR(\d+)\b", operands.split(",", 1)[-1])}
        pending = [p for p in pending if not p & read]
    return most


def schedule(loop: list[str]) -> tuple[int, int, int]:
    """(instructions, LDGs, most LDGs in flight per thread) of one iteration."""
    return len(loop), sum("LDG" in t for t in loop), loads_in_flight(loop)


def normalise(text: str) -> str:
    text = re.sub(r"\bU?R\d+\b", "R", text)
    text = re.sub(r"\bU?P\d+\b", "P", text)
    text = re.sub(r"\.L_x_\d+", "L", text)
    return re.sub(r"0x[0-9a-f]+", "#", text)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def record(n: int, dtype: torch.dtype, whole: bool | None = None):
    spec = importlib.util.spec_from_file_location(
        "reduce_sum_sass", ROOT / "kernels" / "reduce_sum.py"
    )
    lab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab)
    calls = []
    for name in ("_chunk_sum_kernel", "_finalize_kernel"):
        setattr(lab, name, Recorder(getattr(lab, name), calls))
    x = torch.empty(n, dtype=dtype, device="meta")
    inputs = {"x": x, "out": torch.empty((), device="meta")}
    lab.sum_tree(inputs, whole=whole)
    lab.sum_onepass(inputs, whole=whole)
    return calls


def main(argv: list[str]) -> int:
    """Exit 1 when the stage-1 loops differ; --whole 0/1 forces the loop kind."""
    dump, whole = None, None
    verbose = "-v" in argv
    argv = [a for a in argv if a != "-v"]
    if "--whole" in argv:
        i = argv.index("--whole")
        whole = bool(int(argv[i + 1]))
        argv = argv[:i] + argv[i + 2 :]
    if "--dump" in argv:
        i = argv.index("--dump")
        dump = Path(argv[i + 1])
        dump.mkdir(parents=True, exist_ok=True)
        argv = argv[:i] + argv[i + 2 :]
    n = int(argv[0]) if argv else 1 << 30
    dtype = getattr(torch, argv[1]) if len(argv) > 1 else torch.float32
    loops = {}
    for kernel, grid, args, kwargs in record(n, dtype, whole):
        if kernel.fn.__name__ == "_finalize_kernel":
            continue
        name = "onepass" if kwargs.get("ONEPASS") else "tree_stage1"
        compiled = build(kernel, args, kwargs)
        sass, usage = sass_of(compiled)
        if dump:
            (dump / f"{name}_{dtype_name(dtype)}.sass").write_text(sass)
            (dump / f"{name}_{dtype_name(dtype)}.ptx").write_text(compiled.asm["ptx"])
        loop = streaming_loop(sass)
        loops[name] = loop
        ldg = [t for t in loop if "LDG" in t]
        print(f"{name} grid={grid} {kwargs} {usage}")
        print(
            f"  loop: {len(loop)} instructions, {len(ldg)} LDG per iteration, "
            f"at most {loads_in_flight(loop)} in flight per thread"
        )
        if verbose:
            print("\n".join(f"    {t}" for t in loop))
    a, b = loops["tree_stage1"], loops["onepass"]
    same = [normalise(t) for t in a] == [normalise(t) for t in b]
    core = schedule(a) == schedule(b)
    print(f"stage-1 loops (tree vs one-pass): {'IDENTICAL' if same else 'differ'}; ", end="")
    print(f"(instructions, LDGs, in flight): {schedule(a)} vs {schedule(b)}")
    return 0 if core else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
