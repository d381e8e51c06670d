"""The program ncu profiles: replays each case once inside its NVTX range, nothing else inside.

    python -m profkit.ncu_program JOB.json

JOB.json: {"kernel": NAME, "from_file": PATH | null, "seed": INT,
           "cases": [{"variant": ..., "dtype": ..., "shape": [M, N]}, ...]}
Warm-up (compilation, autotuning, module loading) runs outside the range, so the filter
`regex:profkit@.+/` sees exactly the launches of one call per case.
"""

from __future__ import annotations

import json
import sys

import torch

from profkit.measure.case_timing import nvtx_range, resolve_callable
from profkit.spec import case_name, find_spec

CASE_MARK = "profkit.ncu_program: case "


def run(job: dict) -> int:
    spec = find_spec(job["kernel"], job.get("from_file"))
    prepared: dict = {}
    failures = 0
    for case in job["cases"]:
        shape = tuple(case["shape"])
        name = case_name(spec.name, case["variant"], case["dtype"], shape)
        # names the case ncu is on, in ncu's log: if ncu or the program crashes, profkit retries
        # the pass without it (capture.counter_pass)
        print(f"{CASE_MARK}{name}", file=sys.stderr, flush=True)
        try:
            fn = resolve_callable(spec.variant(case["variant"]), prepared)
            gen = torch.Generator(device="cuda").manual_seed(job.get("seed", 0))
            inputs = spec.make_inputs(shape, case["dtype"], "cuda", gen)
            fn(inputs)
            torch.cuda.synchronize()
            with nvtx_range(name):
                fn(inputs)
                torch.cuda.synchronize()
        except Exception as exc:  # one broken case must not hide the others' counters
            failures += 1
            print(f"profkit.ncu_program: {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1 if failures == len(job["cases"]) else 0


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.exit(run(json.load(f)))
