"""Where the long-row softmax's time goes, for ncu's full set (session 6): the shipped rowsplit
(counter exchange) and the tagged-words form (probe 6's 8kw8e) at fp16 1024x32768, each checked
against float64, then launched twice inside an NVTX range `sm6.<name>` (one warm-up outside it).

    ncu --set full --import-source yes --nvtx --nvtx-include "regex:sm6\\..*/" -o REP \\
        python3 bench/softmax_ncu6.py [NAME=CONFIG ...]

NAME=CONFIG (a softmax_triton config tuple, e.g. 'd8kw8r=("rowsplit_defer",8192,4,8,False)')
replaces the tagged form: the shipped config is always profiled first (session 7).
"""

from __future__ import annotations

import ast
import importlib
import sys

import torch

from profkit.spec import find_spec

SHAPE, DTYPE = (1024, 32768), "float16"


def main() -> None:
    spec = find_spec("softmax")
    lab = importlib.import_module("profkit_lab.softmax")
    rows, cols = SHAPE
    configs = {"rowsplit": lab.launch_config(rows, cols, 2)}
    given = dict(arg.split("=", 1) for arg in sys.argv[1:])
    configs |= {k: ast.literal_eval(v) for k, v in given.items()} or {
        "tag_e16": ("rowsplit_tag", 8192, 4, 8, "e16")
    }
    gen = torch.Generator(device="cuda").manual_seed(3)
    inputs = spec.make_inputs(SHAPE, DTYPE, "cuda", gen)
    ref = spec.reference(inputs)
    for name, cfg in configs.items():
        y = lab.softmax_triton(inputs, cfg)  # warm-up (compile) outside the range
        torch.cuda.synchronize()
        err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
        print(f"{name}: {cfg}, max rel err {err:.2e}")
        if not err < 1e-2:
            raise SystemExit(f"{name} is wrong: not profiled")
        torch.cuda.nvtx.range_push(f"sm6.{name}")
        for _ in range(2):
            lab.softmax_triton(inputs, cfg)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main()
