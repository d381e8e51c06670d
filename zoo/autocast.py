"""Pathology zoo, weight casts under autocast (issue 30): a small MLP forward, 64 tokens through
Linear(1024, 4096) -> GELU -> Linear(4096, 1024), under torch.autocast(bfloat16) with its weights
kept in fp32: autocast casts every weight to bf16 on every call (a copy_ kernel per weight reading
16 MB and writing 8 MB), and at 64 tokens those casts take longer than the two GEMMs. The twin
keeps a bf16 copy of the weights and runs the same MLP in bf16 without autocast.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from profkit.spec import KernelSpec, Variant


def _mlp(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


def autocast(inputs: dict) -> torch.Tensor:
    with torch.autocast(inputs["x"].device.type, dtype=torch.bfloat16):
        return _mlp(inputs["x"], inputs["w1"], inputs["b1"], inputs["w2"], inputs["b2"])


def bf16_weights(inputs: dict) -> torch.Tensor:
    return _mlp(inputs["x16"], inputs["w1_16"], inputs["b1_16"], inputs["w2_16"], inputs["b2_16"])


def mlp_inputs(shape, dtype, device, gen) -> dict:
    tokens, d = shape
    h = 4 * d
    x = torch.randn((tokens, d), generator=gen, device=device)
    w1 = torch.randn((h, d), generator=gen, device=device) / d**0.5
    b1 = torch.randn(h, generator=gen, device=device) * 0.1
    w2 = torch.randn((d, h), generator=gen, device=device) / h**0.5
    b2 = torch.randn(d, generator=gen, device=device) * 0.1
    # the twin's weights, cast once here (outside the timed call), as a model kept in bf16 holds
    low = {f"{k}16" if k == "x" else f"{k}_16": v.to(torch.bfloat16)
           for k, v in (("x", x), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))}  # fmt: skip
    return {"x": x, "w1": w1, "b1": b1, "w2": w2, "b2": b2, **low}


def mlp_reference(inputs: dict) -> torch.Tensor:
    # the bf16 weights and input both variants multiply, in float64
    d = {k: inputs[k].double() for k in ("x16", "w1_16", "b1_16", "w2_16", "b2_16")}
    return _mlp(d["x16"], d["w1_16"], d["b1_16"], d["w2_16"], d["b2_16"])


ZOO_AUTOCAST = KernelSpec(
    name="zoo_autocast",
    description="zoo: an MLP forward (64 tokens, 1024 -> 4096 -> 1024) under bf16 autocast with "
    "fp32 weights (cast every call), and with bf16 weights",
    variants=(
        Variant("autocast", autocast, description="fp32 weights under torch.autocast(bf16)"),
        Variant("bf16_weights", bf16_weights, description="weights kept in bf16, no autocast"),
    ),
    make_inputs=mlp_inputs,
    reference=mlp_reference,
    dtypes=("float32",),
    # the casts read 32 MB of fp32 weights and write 16 MB of bf16 (~15 us); the GEMMs are 1.1
    # GFLOP at M = 64 (a few us each)
    shapes=((64, 1024),),
    # bf16 products and a bf16 hidden layer; outputs of magnitude ~1
    tolerances={"float32": (6e-2, 5e-2)},
    # the twin's bytes: bf16 weights and activations read once
    bytes_moved=lambda s, size: 2 * (8 * s[1] * s[1] + 2 * s[0] * s[1] + s[0] * 4 * s[1]),
    flops=lambda s: 2 * 2 * s[0] * s[1] * 4 * s[1],
    interpret_shapes=((4, 64),),
)
