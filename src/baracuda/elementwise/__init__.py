"""Elementwise ops: lerp forward and backward."""

from baracuda.elementwise.lerp import BinaryParamArgs, BinaryParamDescriptor, BinaryParamPlan
from baracuda.elementwise.lerp_backward import (
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamBackwardPlan,
)

__all__ = [
    "BinaryParamArgs",
    "BinaryParamDescriptor",
    "BinaryParamPlan",
    "BinaryParamBackwardArgs",
    "BinaryParamBackwardDescriptor",
    "BinaryParamBackwardPlan",
]
