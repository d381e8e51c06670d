"""The hold-out (issue 30): kernels nobody here wrote, each a profkit KernelSpec, kept apart from
the zoo so that explain is never tuned on them. What an expert concludes from each is in
holdout/EXPECTED, written before any capture; tests/test_holdout.py holds explain to it on the
stored runs under tests/data/holdout/. holdout/README.md says how to capture and promote them.

ATen (scatter_add_, index_add_, cumsum, sort, layer_norm, group_norm), PyTorch's SDPA under each
backend, cuBLAS fp8 (torch._scaled_mm) and Liger-Kernel's ops (fused linear cross entropy, layer
norm, GEGLU, cross entropy). The raw fp32 cuBLAS GEMM without TF32 is not a spec: it is a bare
.ncu-rep (holdout/raw_sgemm.py under ncu), as a user would bring one.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from profkit.spec import KernelSpec, Variant

# --- contended atomics in ATen: 2^22 values into 1024 bins, scatter_add_ and index_add_ --------


def _scatter_add(inputs: dict) -> torch.Tensor:
    out = inputs["out"].zero_()  # a model's torch.zeros(...).scatter_add_(...)
    return out.scatter_add_(0, inputs["idx"], inputs["v"])


def _index_add(inputs: dict) -> torch.Tensor:
    return inputs["out"].zero_().index_add_(0, inputs["idx"], inputs["v"])


def bins_inputs(shape, dtype, device, gen) -> dict:
    n, bins = shape
    v = torch.rand(n, generator=gen, device=device).to(getattr(torch, dtype))
    idx = torch.randint(0, bins, (n,), generator=gen, device=device)
    return {"v": v, "idx": idx, "out": torch.empty(bins, dtype=v.dtype, device=device)}


def bins_reference(inputs: dict) -> torch.Tensor:
    out = torch.zeros(inputs["out"].numel(), dtype=torch.float64, device=inputs["v"].device)
    return out.index_add_(0, inputs["idx"], inputs["v"].double())


HO_SCATTER = KernelSpec(
    name="ho_scatter",
    description="hold-out: ATen scatter_add_ and index_add_ of 2^22 values into 1024 bins",
    variants=(
        Variant("scatter_add", _scatter_add, description="out.zero_().scatter_add_(0, idx, v)"),
        Variant("index_add", _index_add, description="out.zero_().index_add_(0, idx, v)"),
    ),
    make_inputs=bins_inputs,
    reference=bins_reference,
    dtypes=("float32",),
    # 4096 atomics on each of 1024 addresses, in random order
    shapes=((1 << 22, 1024),),
    tolerances={"float32": (1e-3, 1e-5)},  # 4096 values a bin, summed in any order
    bytes_moved=lambda s, size: s[0] * (size + 8) + s[1] * size,
    flops=lambda s: s[0],
    interpret_shapes=((5000, 16),),
)


# --- a scan and a sort along rows ---------------------------------------------------------------


def rows_inputs(shape, dtype, device, gen) -> dict:
    return {"x": torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))}


HO_CUMSUM = KernelSpec(
    name="ho_cumsum",
    description="hold-out: torch.cumsum along rows of 8192 fp32 (ATen's scan)",
    variants=(Variant("cumsum", lambda i: torch.cumsum(i["x"], dim=-1), description="ATen"),),
    make_inputs=rows_inputs,
    reference=lambda i: torch.cumsum(i["x"].double(), dim=-1),
    dtypes=("float32",),
    shapes=((4096, 8192),),  # 128 MB each way: ~70 us at the copy roof
    tolerances={"float32": (1e-3, 1e-4)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * size,
    flops=lambda s: s[0] * s[1],
    interpret_shapes=((3, 100),),
)

HO_SORT = KernelSpec(
    name="ho_sort",
    description="hold-out: torch.sort along rows of 4096 fp32 (values and indices)",
    variants=(Variant("sort", lambda i: tuple(torch.sort(i["x"], dim=-1)), description="ATen"),),
    make_inputs=rows_inputs,
    reference=lambda i: tuple(torch.sort(i["x"].double(), dim=-1)),
    dtypes=("float32",),
    shapes=((4096, 4096),),  # 16.8 M keys in 4096 segments
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: s[0] * s[1] * (2 * size + 8),
    flops=lambda s: 0,
    interpret_shapes=((3, 100),),
)


# --- norms --------------------------------------------------------------------------------------


def norm_inputs(shape, dtype, device, gen) -> dict:
    dt = getattr(torch, dtype)
    x = torch.randn(shape, generator=gen, device=device).to(dt)
    c = shape[1]
    w = (1 + 0.1 * torch.randn(c, generator=gen, device=device)).to(dt)
    b = (0.1 * torch.randn(c, generator=gen, device=device)).to(dt)
    return {"x": x, "w": w, "b": b}


def _ln(i: dict) -> torch.Tensor:
    return F.layer_norm(i["x"], i["x"].shape[-1:], i["w"], i["b"], 1e-5)


def _ln_ref(i: dict) -> torch.Tensor:
    x = i["x"].double()
    return F.layer_norm(x, x.shape[-1:], i["w"].double(), i["b"].double(), 1e-5)


def _liger_ln() -> callable:
    from liger_kernel.ops import LigerLayerNormFunction

    return lambda i: LigerLayerNormFunction.apply(i["x"], i["w"], i["b"], 1e-5)


HO_LAYER_NORM = KernelSpec(
    name="ho_layer_norm",
    description="hold-out: layer norm over 4096-wide bf16 rows, ATen and Liger",
    variants=(
        Variant("aten", _ln, description="F.layer_norm"),
        Variant(
            "liger",
            _ln,
            prepare=_liger_ln,
            requires=("liger_kernel",),
            description="LigerLayerNormFunction",
        ),
    ),  # fmt: skip
    make_inputs=norm_inputs,
    reference=_ln_ref,
    dtypes=("bfloat16",),
    shapes=((8192, 4096),),  # 64 MB each way: ~35 us at the copy roof
    tolerances={"bfloat16": (5e-2, 2e-2)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * size,
    flops=lambda s: 8 * s[0] * s[1],
    interpret_shapes=((4, 64),),
)


def _gn(i: dict) -> torch.Tensor:
    return F.group_norm(i["x"], 32, i["w"], i["b"], 1e-5)


def _gn_ref(i: dict) -> torch.Tensor:
    return F.group_norm(i["x"].double(), 32, i["w"].double(), i["b"].double(), 1e-5)


HO_GROUP_NORM = KernelSpec(
    name="ho_group_norm",
    description="hold-out: F.group_norm, 32 groups, bf16 NCHW",
    variants=(Variant("aten", _gn, description="F.group_norm"),),
    make_inputs=norm_inputs,
    reference=_gn_ref,
    dtypes=("bfloat16",),
    shapes=((16, 256, 64, 64),),  # 32 MB each way
    tolerances={"bfloat16": (5e-2, 2e-2)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * s[2] * s[3] * size,
    flops=lambda s: 8 * s[0] * s[1] * s[2] * s[3],
    interpret_shapes=((2, 64, 4, 4),),
)


# --- PyTorch's scaled dot-product attention under each backend ----------------------------------


def _sdpa(backend: str):
    def prepare():
        from torch.nn.attention import SDPBackend, sdpa_kernel

        chosen = getattr(SDPBackend, backend)

        def run(i: dict) -> torch.Tensor:
            with sdpa_kernel(chosen):
                return F.scaled_dot_product_attention(i["q"], i["k"], i["v"], is_causal=True)

        return run

    return prepare


def _sdpa_plain(i: dict) -> torch.Tensor:
    return F.scaled_dot_product_attention(i["q"], i["k"], i["v"], is_causal=True)


def attn_inputs(shape, dtype, device, gen) -> dict:
    return {k: torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))
            for k in ("q", "k", "v")}  # fmt: skip


def attn_reference(i: dict) -> torch.Tensor:
    q, k, v = (i[n].double() for n in ("q", "k", "v"))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


HO_SDPA = KernelSpec(
    name="ho_sdpa",
    description="hold-out: causal SDPA, bf16, under the flash, efficient and math backends",
    variants=(
        Variant(
            "flash",
            _sdpa_plain,
            prepare=_sdpa("FLASH_ATTENTION"),
            interpretable=False,
            description="sdpa_kernel(FLASH_ATTENTION)",
        ),
        Variant(
            "efficient",
            _sdpa_plain,
            prepare=_sdpa("EFFICIENT_ATTENTION"),
            interpretable=False,
            description="sdpa_kernel(EFFICIENT_ATTENTION)",
        ),
        Variant("math", _sdpa_plain, prepare=_sdpa("MATH"), description="sdpa_kernel(MATH)"),
    ),  # fmt: skip
    make_inputs=attn_inputs,
    reference=attn_reference,
    dtypes=("bfloat16",),
    # (batch, heads, sequence, head dim): 34 GFLOP causal; the math backend writes 512 MB of
    # scores and reads them back
    shapes=((4, 16, 2048, 64),),
    tolerances={"bfloat16": (3e-2, 3e-2)},
    bytes_moved=lambda s, size: 4 * s[0] * s[1] * s[2] * s[3] * size,
    flops=lambda s: 2 * s[0] * s[1] * s[2] * s[2] * s[3],  # causal: half of 4 B H S^2 D
    interpret_shapes=((1, 2, 16, 8),),
)


# --- cuBLAS fp8 ----------------------------------------------------------------------------------


def _scaled_mm(i: dict) -> torch.Tensor:
    return torch._scaled_mm(i["a"], i["bt"].t(), scale_a=i["sa"], scale_b=i["sb"],
                            out_dtype=torch.bfloat16)  # fmt: skip


def fp8_inputs(shape, dtype, device, gen) -> dict:
    m, n, k = shape
    f8 = torch.float8_e4m3fn
    a = torch.randn((m, k), generator=gen, device=device).to(f8)
    bt = torch.randn((n, k), generator=gen, device=device).to(f8)  # K-major: bt.t() column-major
    one = torch.ones((), device=device)
    return {"a": a, "bt": bt, "sa": one, "sb": one}


HO_FP8 = KernelSpec(
    name="ho_fp8",
    description="hold-out: cuBLAS fp8 e4m3 GEMM (torch._scaled_mm), bf16 out, 8192x8192x4096",
    variants=(
        Variant(
            "scaled_mm",
            _scaled_mm,
            interpretable=False,
            baseline=True,
            description="torch._scaled_mm",
        ),
    ),  # fmt: skip
    make_inputs=fp8_inputs,
    reference=lambda i: i["a"].double() @ i["bt"].double().t(),
    dtypes=("float8_e4m3fn",),
    shapes=((8192, 8192, 4096),),  # 550 GFLOP: ~0.4 ms near the fp8 roof
    tolerances={"float8_e4m3fn": (1.0, 2e-2)},  # the bf16 output's rounding of sums ~ +-100
    bytes_moved=lambda s, size: (s[0] * s[2] + s[2] * s[1]) + 2 * s[0] * s[1],
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    interpret_shapes=((32, 32, 32),),
)


# --- Liger-Kernel's other ops ---------------------------------------------------------------------


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _liger_flce() -> callable:
    from liger_kernel.ops import LigerFusedLinearCrossEntropyFunction

    return lambda i: _first(LigerFusedLinearCrossEntropyFunction.apply(i["x"], i["w"], i["t"]))


def _flce_eager(i: dict) -> torch.Tensor:
    return F.cross_entropy((i["x"] @ i["w"].t()).float(), i["t"])


def flce_inputs(shape, dtype, device, gen) -> dict:
    tokens, d, vocab = shape
    dt = getattr(torch, dtype)
    x = torch.randn((tokens, d), generator=gen, device=device).to(dt)
    w = (torch.randn((vocab, d), generator=gen, device=device) / d**0.5).to(dt)
    t = torch.randint(0, vocab, (tokens,), generator=gen, device=device)
    return {"x": x, "w": w, "t": t}


HO_LIGER_FLCE = KernelSpec(
    name="ho_liger_flce",
    description="hold-out: Liger's fused linear cross entropy (forward, which also computes the "
    "input and weight gradients), 4096 tokens, 2048 -> 32000",
    variants=(
        Variant(
            "liger",
            _flce_eager,
            prepare=_liger_flce,
            requires=("liger_kernel",),
            description="LigerFusedLinearCrossEntropyFunction",
        ),
    ),  # fmt: skip
    make_inputs=flce_inputs,
    reference=lambda i: F.cross_entropy(i["x"].double() @ i["w"].double().t(), i["t"]),
    dtypes=("bfloat16",),
    shapes=((4096, 2048, 32000),),  # logits 537 GFLOP forward, twice that for the gradients
    tolerances={"bfloat16": (5e-2, 1e-2)},
    bytes_moved=lambda s, size: (s[0] * s[1] + s[2] * s[1]) * size * 2,
    flops=lambda s: 3 * 2 * s[0] * s[1] * s[2],
    interpret_shapes=((16, 32, 64),),
)


def _liger_geglu() -> callable:
    from liger_kernel.ops import LigerGELUMulFunction

    return lambda i: LigerGELUMulFunction.apply(i["a"], i["b"])


def geglu_inputs(shape, dtype, device, gen) -> dict:
    return {k: torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))
            for k in ("a", "b")}  # fmt: skip


HO_LIGER_GEGLU = KernelSpec(
    name="ho_liger_geglu",
    description="hold-out: Liger's GEGLU (tanh GELU(a) * b), bf16",
    variants=(
        Variant(
            "liger",
            lambda i: F.gelu(i["a"], approximate="tanh") * i["b"],
            prepare=_liger_geglu,
            requires=("liger_kernel",),
            description="LigerGELUMulFunction",
        ),
    ),  # fmt: skip
    make_inputs=geglu_inputs,
    reference=lambda i: F.gelu(i["a"].double(), approximate="tanh") * i["b"].double(),
    dtypes=("bfloat16",),
    shapes=((8192, 8192),),  # 384 MB: ~100 us at the copy roof
    tolerances={"bfloat16": (3e-2, 2e-2)},
    bytes_moved=lambda s, size: 3 * s[0] * s[1] * size,
    flops=lambda s: 12 * s[0] * s[1],
    interpret_shapes=((4, 64),),
)


def _liger_ce() -> callable:
    from liger_kernel.ops import LigerCrossEntropyFunction

    # Liger writes the logits' gradient over its input: it works on a copy made by make_inputs
    # (the first call sees the logits; later calls the same bytes)
    return lambda i: _first(LigerCrossEntropyFunction.apply(i["work"], i["t"], None))


def ce_inputs(shape, dtype, device, gen) -> dict:
    tokens, vocab = shape
    logits = torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))
    t = torch.randint(0, vocab, (tokens,), generator=gen, device=device)
    return {"logits": logits, "work": logits.clone(), "t": t}


HO_LIGER_CE = KernelSpec(
    name="ho_liger_ce",
    description="hold-out: Liger's cross entropy over 32000 bf16 logits (loss, gradient in place)",
    variants=(
        Variant(
            "liger",
            lambda i: F.cross_entropy(i["work"].float(), i["t"]),
            prepare=_liger_ce,
            requires=("liger_kernel",),
            description="LigerCrossEntropyFunction",
        ),
    ),  # fmt: skip
    make_inputs=ce_inputs,
    reference=lambda i: F.cross_entropy(i["logits"].double(), i["t"]),
    dtypes=("bfloat16",),
    shapes=((8192, 32000),),  # 524 MB read and written back: ~0.2 ms at the copy roof
    tolerances={"bfloat16": (1e-2, 1e-2)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * size,
    flops=lambda s: 6 * s[0] * s[1],
    interpret_shapes=((4, 64),),
)
