"""The lab softmax spec plus Liger-Kernel 0.8.5's softmax, for one comparison capture."""
from dataclasses import replace

from liger_kernel.ops.softmax import LigerSoftmaxFunction

from kernels.softmax import SPEC as LAB
from profkit.spec import Variant


def liger(inputs):
    return LigerSoftmaxFunction.apply(inputs["x"])


SPEC = replace(LAB, variants=LAB.variants + (Variant("liger", liger, baseline=True, description="Liger-Kernel 0.8.5"),))
