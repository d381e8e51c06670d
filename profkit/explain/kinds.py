"""What a kernel is and who owns it, decided once per launch: one rule, read by every module.

The kind picks a cause's remedy (a GEMM's under-used cache is larger tiles, a gather's uncoalesced
loads are index locality, contended atomics want a reduction before them); the owner picks whose
lever it is (the user's Triton or CUDA, a library by its family, torch.compile's generated code).
Before this rule eight predicates answered "is it a GEMM / does it issue MMAs" and disagreed on
stored rows (a cuBLAS GEMV on the Tensor roof yet "no MMAs"; ATen's elementwise kernels at 5%
Tensor with no FMA counter judged on the Tensor roof).
"""

from __future__ import annotations

import re
from enum import StrEnum

from profkit.explain.kernel_family import GEMM, LIBRARY, Family, short_name


class KernelKind(StrEnum):
    GEMM = "gemm"  # a matrix product: a GEMM library kernel, MMAs doing the work, a 2MNK model
    ATTENTION = "attention"  # a fused attention kernel (flash, fmha, a user's attention)
    CONVOLUTION = "convolution"  # cuDNN's (implicit-GEMM) convolutions, a convolution op's kernel
    NORM = "norm"  # a row normalization or softmax: a reduction per row, then elementwise
    REDUCTION = "reduction"  # sums, means, split-K reductions
    SCAN = "scan"  # prefix sums (cumsum)
    SORT = "sort"  # sorts, top-k
    SCATTER_ATOMIC = "scatter_atomic"  # data-dependent writes through atomics (scatter_add, hist)
    GATHER = "gather"  # data-dependent reads (index, gather, embedding)
    COPY = "copy"  # copies, fills, casts, concatenations, layout changes
    ELEMENTWISE = "elementwise"  # everything else written per element or per row
    ANY = "*"  # a remedy for every kind


class Owner(StrEnum):
    USER = "user"  # the user's Triton or CUDA: its code is the lever
    LIBRARY = "library"  # cuBLAS, cuDNN, ATen, flash attention, Liger: its options and inputs
    INDUCTOR = "inductor"  # torch.compile's generated Triton: the compiler's inputs and options


# kinds whose work is a matrix product (they issue MMAs by design): GEMM advice fits them
MATRIX = frozenset({KernelKind.GEMM, KernelKind.ATTENTION, KernelKind.CONVOLUTION})
# a remedy asked of a kind not in an entry's table falls back to its nearest kind, then to ANY
FALLBACK = {
    KernelKind.ATTENTION: KernelKind.GEMM,
    KernelKind.CONVOLUTION: KernelKind.GEMM,
    KernelKind.SCATTER_ATOMIC: KernelKind.GATHER,
}

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear")
COPY_OPS = ("aten::copy_", "aten::_to_copy", "aten::fill_", "aten::cat", "aten::clone")
# first match wins; read off the base name (namespace, templates and parameters dropped)
_ATTENTION = re.compile(r"flash|fmha|attn|attention|sdpa", re.IGNORECASE)
_SCATTER_GATHER = re.compile(r"scatter_gather", re.IGNORECASE)
_SPLITK_REDUCE = re.compile(r"splitkreduce|splitk_reduce", re.IGNORECASE)
_BY_NAME: tuple[tuple[KernelKind, re.Pattern], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        (KernelKind.SCATTER_ATOMIC, r"scatter|atomic|hist|index_add|index_put|indexFunc|bincount"),
        (KernelKind.SCAN, r"scan|cumsum|cumprod"),
        (KernelKind.SORT, r"sort|radix|topk"),
        (KernelKind.GATHER, r"index|gather|embedding"),
        (KernelKind.COPY, r"copy|memcpy|memset|fill|transpose|^cat|catarray"),
        (KernelKind.NORM, r"norm|softmax"),
        (KernelKind.REDUCTION, r"reduce|_sum|mean"),
    )
)


def kernel_kind(
    name: str | None,
    family: Family | None,
    mma: bool,
    matmul_model: bool,
    op: str | None = None,
    atomics: bool | None = None,
) -> KernelKind:
    """The one rule, first match wins: attention (flash's family or the name), cuDNN's
    convolutions (or a convolution op's kernel), a copy op's kernel, a split-K reduction, then a
    matrix product (a GEMM library's kernel, MMAs doing the work, a 2MNK model), then the name
    (atomics, scans, sorts, gathers, copies, norms), then the family's reductions, else
    elementwise. Inductor's names list the ops they fuse: its casts (_to_copy) are no copy.
    ATen's one scatter/gather kernel is told apart by the atomics it issues, where captured."""
    fam = family or Family.OTHER
    base = short_name(name or "", width=200)
    if fam == Family.FLASH or _ATTENTION.search(base):  # cuDNN's SDPA kernels too
        return KernelKind.ATTENTION
    if fam == Family.CUDNN or (fam != Family.INDUCTOR and "convolution" in (op or "")):
        return KernelKind.CONVOLUTION
    if fam == Family.OTHER and op in GEMM_OPS:  # an unnamed library kernel behind a matmul op
        return KernelKind.GEMM
    if fam != Family.INDUCTOR and op in COPY_OPS:  # ATen's copies run its elementwise kernels
        return KernelKind.COPY
    if _SPLITK_REDUCE.search(base):
        return KernelKind.REDUCTION
    if fam in GEMM or mma or matmul_model:
        return KernelKind.GEMM
    words = base.replace("_to_copy", "") if fam == Family.INDUCTOR else base
    if _SCATTER_GATHER.search(words) and atomics is not None:
        # ATen's one kernel for scatter and gather: the atomics it issues say which it ran
        return KernelKind.SCATTER_ATOMIC if atomics else KernelKind.GATHER
    for kind, pattern in _BY_NAME:
        if pattern.search(words):
            return kind
    if fam == Family.ATEN_NORM:
        return KernelKind.NORM
    if fam == Family.ATEN_REDUCE or re.match(r"triton_(red|per)_", base):
        return KernelKind.REDUCTION
    return KernelKind.ELEMENTWISE


def owner(family: Family | None) -> Owner:
    if family == Family.INDUCTOR:
        return Owner.INDUCTOR
    if family in LIBRARY:
        return Owner.LIBRARY
    return Owner.USER


# A library GEMM's operand type, from its name (a raw report carries no dtype): nvjet's first
# letters name the inputs (stored H200 runs: "tst" at bfloat16, 54 launches; "hsh" at float16,
# 23; "qqtst" at float8_e4m3fn, 8), the older xmma/cuBLAS names spell the type out.
_OPERAND_DTYPE: tuple[tuple[str, re.Pattern], ...] = tuple(
    (dtype, re.compile(pattern, re.IGNORECASE))
    for dtype, pattern in (
        ("float8_e4m3fn", r"^nvjet_sm\d+_qq|e4m3"),
        ("float8_e5m2", r"e5m2"),
        ("bfloat16", r"^nvjet_sm\d+_t|bf16"),
        ("float16", r"^nvjet_sm\d+_h|hgemm|f16f16|fp16"),
        ("float32", r"^nvjet_sm\d+_s|sgemm|f32f32|tf32"),
        ("float64", r"dgemm|f64f64"),
        ("int8", r"i8i8|igemm|imma"),
    )
)


def operand_dtype(rec) -> tuple[str | None, str]:  # noqa: ANN001 - a LaunchRecord (no cycle)
    """A report launch's operand dtype where the report names none, and where it came from: a
    library GEMM's name, else its counters (a GEMM issuing no MMAs, its math on the FMA pipe and
    not the FP64 one, is fp32: a SIMT GEMM). None where neither says."""
    if rec.family in GEMM:
        base = short_name(rec.name or "", width=200)
        for dtype, pattern in _OPERAND_DTYPE:
            if pattern.search(base):
                return dtype, "kernel name"
    fma, fp64 = rec.fma_pipe_pct or 0.0, rec.fp64_pipe_pct or 0.0
    if rec.kind == KernelKind.GEMM and rec.mma_kind is None and fma > fp64 and fma > 0:
        return "float32", "FMA pipe"
    return None, ""
