"""Where the per-process offset of small cases comes from (issue 7): per-graph medians of a few
3-10 us RMSNorm cases, in one process, for three ways of making the next graph:

  same   - a new graph over the same inputs
  fresh  - a new graph over newly allocated inputs (new addresses), the old ones kept alive
  replay - the first graph replayed again (no new capture)

If `fresh` spreads its per-graph medians as widely as two processes differ while `same` and
`replay` do not, the offset is where the inputs sit, and pooling rounds over fresh inputs
(devicetime.ROUNDS) turns it from a bias of the run into spread inside it.

    PYTHONPATH=. python3 bench/timing_rounds.py OUT.csv [GRAPHS]
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import torch

from profkit import clocks, devicetime
from profkit.spec import find_spec
from profkit.timing import check, resolve_callable

CASES = [
    ("compile", "bfloat16", (1, 4096)),
    ("compile", "float32", (1, 4096)),
    ("native", "float32", (16, 8192)),
    ("triton", "float32", (32, 16384)),
    ("triton", "float16", (16, 8192)),
    ("native", "bfloat16", (32, 16384)),
]
PER_GRAPH = 50

out, graphs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8
spec = find_spec("rmsnorm")
flush = devicetime._flusher(False)
rows, cache = [], {}
for variant, dtype, shape in CASES:
    fn = resolve_callable(spec.variant(variant), cache)
    assert check(spec, fn, shape, dtype, "cuda", seed=3).correct, (variant, dtype, shape)
    gen = torch.Generator(device="cuda").manual_seed(11)
    held = [spec.make_inputs(shape, dtype, "cuda", gen)]
    for mode in ("replay", "same", "fresh"):
        for g in range(graphs):
            if mode == "fresh":
                held.append(spec.make_inputs(shape, dtype, "cuda", gen))
            inputs = held[-1]
            probe = clocks.Probe()
            windows, empty = devicetime._graph_samples(
                lambda fn=fn, inputs=inputs: fn(inputs),
                flush,
                PER_GRAPH * (4 if mode == "replay" else 1),
                probe,
            )
            if mode == "replay":  # one capture, four replays: medians per replay
                parts = np.array_split(np.asarray(windows), 4)
            else:
                parts = [np.asarray(windows)]
            for p in parts:
                rows.append(
                    dict(
                        case=f"{variant}.{dtype}.{shape[0]}x{shape[1]}",
                        mode=mode,
                        graph=g,
                        median_us=(np.median(p) - np.median(empty)) * 1e3,
                        ptr=hex(next(iter(inputs.values())).data_ptr())
                        if isinstance(inputs, dict)
                        else "",
                    )
                )
            if mode == "replay":
                break
df = pd.DataFrame(rows)
df.to_csv(out, index=False)
spread = df.groupby(["case", "mode"]).median_us.agg(["min", "median", "max", "count"])
spread["range_us"] = spread["max"] - spread["min"]
print(spread.round(3).to_string())
