"""What a profile's kernel group does in a training step, by PyTorch op class (matmul, attention,
norm, elementwise, optimizer, loss, copy/cast ...), read from its kernel's name, family and
PyTorch op; and for the classes whose fix is known, that fix as a next step.

A group's kernel family says whose code it is (cuBLAS, ATen ...); its op says what the step asked
for. ATen's multi-tensor kernels are the optimizer's, its log_softmax over the logits the loss's,
its copy_ kernels dtype casts (same-dtype contiguous copies are memcpys, not kernels). Pure
Python: no torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum

from profkit.explain.kernel_family import Family, family
from profkit.explain.model import Action, Advice


class OpClass(StrEnum):
    MATMUL = "matmul"
    CONVOLUTION = "convolution"
    ATTENTION = "attention"
    NORM = "norm"
    ACTIVATION = "activation"
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    OPTIMIZER = "optimizer"
    LOSS = "loss"
    CAST = "copy/cast"
    EMBEDDING = "embedding"
    COMPILED = "torch.compile"
    OTHER = "other"


_MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
               "aten::linear", "aten::_scaled_mm", "aten::addmv")  # fmt: skip
_LOSS_OPS = ("aten::_log_softmax", "aten::_log_softmax_backward_data", "aten::nll_loss",
             "aten::cross_entropy_loss")  # fmt: skip
_CAST_OPS = ("aten::copy_", "aten::_to_copy", "aten::to")
_ACTIVATIONS = ("gelu", "silu", "relu", "tanh", "sigmoid", "glu", "mish", "hardswish")


def op_class(row: Mapping) -> OpClass:
    name, op = str(row.get("kernel_name") or ""), str(row.get("op") or "")
    fam = family(name)
    if fam == Family.INDUCTOR:
        return OpClass.COMPILED
    if "multi_tensor_apply" in name or op.startswith(("aten::_fused_adam", "aten::_fused_sgd",
                                                      "aten::_foreach_")):  # fmt: skip
        return OpClass.OPTIMIZER
    outer = str(row.get("outer_op") or "")  # the op the step called (runs since issue 33)
    if op.startswith(_LOSS_OPS) or "LogSoftMax" in name or name.startswith("nll_loss"):
        return OpClass.LOSS
    if outer.startswith(("aten::cross_entropy", "aten::nll_loss")):
        return OpClass.LOSS
    if "attention" in op or "sdpa" in name or fam == Family.FLASH:
        return OpClass.ATTENTION
    if "convolution" in op:
        return OpClass.CONVOLUTION
    if fam in (Family.CUBLAS, Family.CUTLASS) or op in _MATMUL_OPS:
        return OpClass.MATMUL
    if op in _CAST_OPS or "copy_kernel" in name:
        return OpClass.CAST
    if fam == Family.ATEN_NORM or "norm" in op or "softmax" in op:
        return OpClass.NORM
    if "embedding" in op:
        return OpClass.EMBEDDING
    if fam == Family.ATEN_ELEMENTWISE and any(a in op for a in _ACTIVATIONS):
        return OpClass.ACTIVATION
    if fam == Family.ATEN_ELEMENTWISE:
        return OpClass.ELEMENTWISE
    if fam == Family.ATEN_REDUCE:
        return OpClass.REDUCTION
    return OpClass.OTHER


def label(row: Mapping, cls: OpClass) -> str:
    """What the group is, in a few words: the class, and for the known fixes what it is exactly."""
    op = str(row.get("op") or "")
    if cls == OpClass.OPTIMIZER:
        return f"optimizer step ({optimizer_kind(row)})"
    if cls == OpClass.LOSS:
        part = "backward" if "backward" in op or "Backward" in str(row.get("kernel_name")) else (
            "forward")  # fmt: skip
        if op in _CAST_OPS:
            return f"cross-entropy: its input cast to {row.get('dtype')} (copy_)"
        what = "log_softmax" if "softmax" in op.lower() else op.rsplit("::", 1)[-1]
        return f"cross-entropy {part} ({what} over the logits)"
    if cls == OpClass.CAST:
        dtype = str(row.get("dtype") or "")
        return f"dtype casts to {dtype} (copy_)" if dtype in _DTYPE_WORDS else "copies (copy_)"
    if _backward_sum(row, cls):
        node = row.get("grad_fn")
        if not node:  # a run from before the export named autograd's nodes
            return "backward sums (aten::sum: broadcasts' gradients, such as biases')"
        what = "Linear layers' bias gradients" if _bias_grads(row) else "a broadcast's gradient"
        return f"backward sums (aten::sum in {node}: {what})"
    return str(cls)


def _backward_sum(row: Mapping, cls: OpClass) -> bool:
    """A reduction autograd runs in backward as aten::sum: the gradient of a broadcast (a bias
    added to every row sums the rows' gradients). Backward's, where the group's launches ran in
    an autograd node (its grad_fn: AddmmBackward0 ...); in runs before the export named nodes,
    where its innermost range is the program's own "backward"."""
    if cls != OpClass.REDUCTION or row.get("op") != "aten::sum":
        return False
    return bool(row.get("grad_fn")) or row.get("range") == "backward"


# the autograd nodes whose aten::sum is a biased Linear's bias gradient (F.linear runs addmm)
_LINEAR_NODES = ("AddmmBackward0",)


def _bias_grads(row: Mapping) -> bool:
    """A backward sum that is a Linear's bias gradient: its node is addmm's; in a run from before
    the export named nodes, any backward sum (a transformer's are mostly those)."""
    node = row.get("grad_fn")
    return node in _LINEAR_NODES if node else row.get("range") == "backward"


# CUTLASS names its kernels by the operands' alignment in elements: align8 is 16 bytes of bf16;
# align1 (or 2, 4 for 16-bit types) is the fallback cuBLAS takes for a leading dimension that is
# not a multiple of 8
_UNALIGNED = re.compile(r"_align[124](?!\d)")
_DTYPE_WORDS = {"bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2"}


def optimizer_kind(row: Mapping) -> str:
    """'fused AdamW', 'foreach AdamW' ...: how the step is implemented, and which optimizer (from
    torch.optim's own range, Optimizer.step#AdamW.step, where the group holds it)."""
    op, held = str(row.get("op") or ""), str(row.get("range") or "")
    which = held.split("#", 1)[1].split(".", 1)[0] if held.startswith("Optimizer.step#") else ""
    how = "fused" if op.startswith(("aten::_fused_",)) else "foreach" if "_foreach_" in op else ""
    return " ".join(w for w in (how, which or "optimizer") if w) + ", multi-tensor kernels"


def fix(row: Mapping, cls: OpClass) -> Advice | None:
    """The known fix for the group's class, or None where the catalogue's own steps stand."""
    op, dtype = str(row.get("op") or ""), str(row.get("dtype") or "")
    name = str(row.get("kernel_name") or "")
    if cls == OpClass.MATMUL and _UNALIGNED.search(name):
        return Advice(Action.ALIGN_GEMM, ["kernel_name"])
    if cls == OpClass.OPTIMIZER:
        fused = op.startswith("aten::_fused_")
        return Advice(Action.OPTIMIZER_STATE if fused else Action.FUSED_OPTIMIZER, ["op"])
    if cls == OpClass.LOSS:
        return Advice(Action.FUSED_LINEAR_CE, ["op"])
    if cls == OpClass.CAST and dtype in ("bfloat16", "float16"):
        return Advice(Action.WEIGHT_CASTS, ["op", "dtype"], {"dtype": dtype})
    if cls == OpClass.CAST:
        return Advice(Action.FOLD_CASTS, ["op", "dtype"])
    if cls == OpClass.NORM and family(str(row.get("kernel_name") or "")) == Family.ATEN_NORM:
        return Advice(Action.NORM_NEIGHBOURS, ["op"])
    if cls == OpClass.ACTIVATION:
        return Advice(Action.ACTIVATION_EPILOGUE, ["op"])
    if _backward_sum(row, cls) and _bias_grads(row):
        return Advice(Action.BIAS_GRADS, ["op", "grad_fn" if row.get("grad_fn") else "range"])
    return None
