"""Probe 14's program: examples/gpt_train.py with the time of each phase since the parent started
it (P14_T0, the parent's time.time()), printed as "P14 <phase> <s>" on stderr: the interpreter's
start, torch imported, the CUDA context, the example imported, the model built (first step opened),
step 11 opened (where the counter pass's gate opens), the end."""

import os
import sys
import time

T0 = float(os.environ["P14_T0"])


def mark(what):
    print(f"P14 {what} {time.time() - T0:.3f}", file=sys.stderr, flush=True)


mark("python")
import torch  # noqa: E402

mark("import_torch")
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
mark("cuda_ctx")
sys.path.insert(0, "examples")
import gpt_train  # noqa: E402

mark("import_prog")
steps = [0]
push = torch.cuda.nvtx.range_push


def range_push(msg):
    if msg == "step":
        if steps[0] in (0, 1, 10):
            mark(f"step{steps[0] + 1}")
        steps[0] += 1
    return push(msg)


torch.cuda.nvtx.range_push = range_push
sys.argv = ["examples/gpt_train.py", "--steps", "20", "--last", "10"]
gpt_train.main()
mark("done")
