"""Softmax-family ops: sparsemax forward and backward."""

from baracuda.softmax.sparsemax import SparsemaxArgs, SparsemaxDescriptor, SparsemaxPlan
from baracuda.softmax.sparsemax_backward import (
    SparsemaxBackwardArgs,
    SparsemaxBackwardDescriptor,
    SparsemaxBackwardPlan,
)

__all__ = [
    "SparsemaxArgs",
    "SparsemaxDescriptor",
    "SparsemaxPlan",
    "SparsemaxBackwardArgs",
    "SparsemaxBackwardDescriptor",
    "SparsemaxBackwardPlan",
]
