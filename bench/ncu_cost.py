"""Cost of profkit's default counter pass against `ncu --set full` over the same cases, one run.

    PYTHONPATH=. python bench/ncu_cost.py OUT_DIR [DTYPE ...] [MxN ...]

Both passes profile the same worker job (every variant at the given dtypes and shapes of rmsnorm,
default: its whole default sweep) with
kernel replay and clocks left as found; wall time includes the program's own run (the same in
both). Writes OUT_DIR/ncu-cost.json and prints the ratio.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from profkit import ncu
from profkit.spec import find_spec, parse_shape

out = Path(sys.argv[1])
dtypes = [a for a in sys.argv[2:] if "x" not in a]
shapes = [parse_shape(a) for a in sys.argv[2:] if "x" in a]
spec = find_spec("rmsnorm")
job = {
    "kernel": "rmsnorm",
    "from_file": None,
    "seed": 0,
    "cases": [
        {"variant": v.name, "dtype": d, "shape": list(s)}
        for d in (dtypes or spec.dtypes)
        for s in (shapes or spec.shapes)
        for v in spec.variants
    ],
}
job_path = out / "cost-job.json"
job_path.write_text(json.dumps(job))
program = [sys.executable, "-m", "profkit.worker", str(job_path)]

t0 = time.perf_counter()
import subprocess  # noqa: E402  (the bare program's own time, for reference)

subprocess.run(program, check=True)
bare_s = time.perf_counter() - t0
results = {"cases": len(job["cases"]), "bare_program_s": round(bare_s, 1)}
for label, options in (("default", {}), ("set_full", {"set_name": "full"})):
    r = ncu.run_counter_pass(
        program,
        Path("/tmp") / f"cost-{label}",
        timeout_s=1200,
        log_path=out / f"cost-{label}.log",
        **options,
    )
    results[label] = {
        "ok": r.ok,
        "problem": r.problem,
        "wall_s": round(r.wall_s, 1),
        "argv": r.argv,
    }
    print(label, r.ok, r.problem, f"{r.wall_s:.1f} s", flush=True)
results["ratio_full_over_default"] = round(
    results["set_full"]["wall_s"] / results["default"]["wall_s"], 2
)
(out / "ncu-cost.json").write_text(json.dumps(results, indent=1))
print(json.dumps({k: v for k, v in results.items() if k not in ("default", "set_full")}))
