"""A training step's kernel groups named for what they are (profkit.workload.op_class), from the
names, ops and ranges of ATen's, cuBLAS's and cuDNN's kernels as torch.profiler records them, and
the known fix of the classes that have one: never "fuse it away" for an op that is fused already."""

from __future__ import annotations

import pytest

from profkit.explain.model import Action
from profkit.explain.phrases import advice_text
from profkit.workload.op_class import OpClass, fix, label, op_class

MTA = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4>>(int)"  # noqa: E501
COPY = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>>(int)"  # noqa: E501
SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)"  # noqa: E501
LN = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>(int, float, float const*, float const*, float const*, float*, float*, float*)"  # noqa: E501
GELU = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>>(int)"  # noqa: E501
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>>(int)"  # noqa: E501
SUM = "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4, 4>>(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4, 4>)"  # noqa: E501
STEP = "Optimizer.step#AdamW.step"


def row(name: str, op: str | None, rng: str = "forward", dtype: str = "bfloat16") -> dict:
    return {"kernel_name": name, "op": op, "range": rng, "dtype": dtype}


@pytest.mark.parametrize(
    "r, cls, named",
    [
        (row(MTA, "aten::_fused_adamw_", STEP, "float32"), OpClass.OPTIMIZER,
         "optimizer step (fused AdamW, multi-tensor kernels)"),
        (row(MTA, "aten::_foreach_mul_", STEP), OpClass.OPTIMIZER,
         "optimizer step (foreach AdamW, multi-tensor kernels)"),
        (row(SOFTMAX, "aten::_log_softmax", "loss", "float32"), OpClass.LOSS,
         "cross-entropy forward (log_softmax over the logits)"),
        (row("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, "
             "float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*)",
             "aten::_log_softmax_backward_data", "backward", "float32"), OpClass.LOSS,
         "cross-entropy backward (log_softmax over the logits)"),
        (row(COPY, "aten::copy_"), OpClass.CAST, "dtype casts to bfloat16 (copy_)"),
        (row(LN, "aten::native_layer_norm"), OpClass.NORM, "norm"),
        (row(GELU, "aten::gelu"), OpClass.ACTIVATION, "activation"),
        (row(ADD, "aten::add"), OpClass.ELEMENTWISE, "elementwise"),
        (row("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "aten::mm"), OpClass.MATMUL,
         "matmul"),
        (row("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128",
             "aten::_cudnn_attention_forward"), OpClass.ATTENTION, "attention"),
        (row("triton_poi_fused_add_0", "aten::add"), OpClass.COMPILED, "torch.compile"),
    ],
)  # fmt: skip
def test_a_group_is_named_for_what_it_does_in_the_step(r: dict, cls: OpClass, named: str) -> None:
    assert op_class(r) == cls and label(r, cls) == named


def test_a_fused_optimizer_is_told_precision_or_state_never_to_fuse() -> None:
    r = row(MTA, "aten::_fused_adamw_", STEP, "float32")
    step = fix(r, op_class(r))
    assert step.action == Action.OPTIMIZER_STATE
    said = advice_text(step)
    assert "fused already" in said and "precision" in said and "not from fusing it" in said
    foreach = row(MTA, "aten::_foreach_addcdiv_", STEP)
    assert "fused=True" in advice_text(fix(foreach, op_class(foreach)))


def test_cross_entropy_is_told_the_fused_linear_cross_entropy() -> None:
    r = row(SOFTMAX, "aten::_log_softmax", "loss", "float32")
    said = advice_text(fix(r, op_class(r)))
    assert "LigerFusedLinearCrossEntropyLoss" in said and "never materializes" in said


def test_casts_down_are_autocasts_weights_and_casts_up_fold_into_their_reader() -> None:
    down = row(COPY, "aten::copy_")
    said = advice_text(fix(down, op_class(down)))
    assert "keep a bf16 copy of the weights" in said and "torch.compile fold the casts" in said
    up = row(COPY.replace("c10::BFloat16", "float"), "aten::copy_", "norm", "float32")
    assert fix(up, op_class(up)).action == Action.FOLD_CASTS


@pytest.mark.parametrize("r", [row(LN, "aten::native_layer_norm"), row(GELU, "aten::gelu")])
def test_a_whole_op_is_told_its_neighbours_not_to_fuse_it_away(r: dict) -> None:
    said = advice_text(fix(r, op_class(r)))
    assert "fuse it away" not in said
    assert "neighbours" in said or "epilogue" in said


def test_backwards_sums_are_named_as_broadcasts_gradients_and_told_where_they_fold() -> None:
    r = row(SUM, "aten::sum", "backward")
    assert (
        label(r, op_class(r)) == "backward sums (aten::sum: broadcasts' gradients, such as biases')"
    )
    said = advice_text(fix(r, op_class(r)))
    assert "bias-gradient epilogue" in said and "bias=False" in said and "fuse it away" not in said
    node = {**row(SUM, "aten::sum", "blocks"), "grad_fn": "AddmmBackward0"}  # any range's name
    assert label(node, op_class(node)) == (
        "backward sums (aten::sum in AddmmBackward0: Linear layers' bias gradients)"
    )
    assert fix(node, op_class(node)).because == ["op", "grad_fn"]
    forward = row(SUM, "aten::sum", "forward")  # a sum the model asked for: no bias story
    assert (
        fix(forward, op_class(forward)) is None and label(forward, op_class(forward)) == "reduction"
    )


def test_classes_without_a_known_fix_keep_the_catalogues_steps() -> None:
    for r in (row(ADD, "aten::add"), row("nvjet_sm90_tst_64x8_NNT", "aten::mm")):
        assert fix(r, op_class(r)) is None


def test_a_gemm_on_cutlass_unaligned_fallback_is_told_to_pad_the_odd_dimension() -> None:
    """GPT-2's output head at a 50,257-token vocabulary ran cuBLAS's CUTLASS align1 kernels on the
    H200 (2026-12-04), 43% of the device time at 20-30% Tensor."""
    name = ("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>"
            "(cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1::Params)")  # fmt: skip
    r = row(name, "aten::mm")
    assert op_class(r) == OpClass.MATMUL
    said = advice_text(fix(r, op_class(r)))
    assert "50,304" in said and "multiple of 8" in said
    assert fix(row(name.replace("align1", "align8"), "aten::mm"), OpClass.MATMUL) is None


def test_a_cast_inside_the_cross_entropy_is_the_loss() -> None:
    r = row(COPY, "aten::copy_", "loss", "float32") | {"outer_op": "aten::cross_entropy_loss"}
    assert op_class(r) == OpClass.LOSS
    assert label(r, OpClass.LOSS) == "cross-entropy: its input cast to float32 (copy_)"
    assert fix(r, OpClass.LOSS).action == Action.FUSED_LINEAR_CE
