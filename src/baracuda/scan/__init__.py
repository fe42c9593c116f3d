"""Axis scans: cumsum, cumprod, cummax, cummin, logcumsumexp, forward and backward."""

from baracuda.scan.scan import ScanArgs, ScanDescriptor, ScanPlan
from baracuda.scan.scan_backward import (
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanBackwardPlan,
)

__all__ = [
    "ScanArgs",
    "ScanDescriptor",
    "ScanPlan",
    "ScanBackwardArgs",
    "ScanBackwardDescriptor",
    "ScanBackwardPlan",
]
