"""baracuda: fused CUDA kernels, forward and backward, for any DLPack framework.

``import baracuda`` imports no framework and touches no GPU: CUDA is initialised on the first
call that needs it, and kernels are compiled (and cached on disk) on first use.
"""

from baracuda._cuda.compiler import cache_dir
from baracuda._cuda.driver import gpu_available
from baracuda._cuda.memory import Workspace
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import TensorView
from baracuda._version import __version__
from baracuda.elementwise import (
    BinaryParamArgs,
    BinaryParamBackwardArgs,
    BinaryParamBackwardDescriptor,
    BinaryParamBackwardPlan,
    BinaryParamDescriptor,
    BinaryParamPlan,
)
from baracuda.elementwise.api import lerp, lerp_backward
from baracuda.errors import (
    BaracudaError,
    BufferTooSmall,
    CompileError,
    CudaError,
    InvalidProblem,
    MisalignedOperand,
    Unsupported,
    WorkspaceTooSmall,
)
from baracuda.scan import (
    ScanArgs,
    ScanBackwardArgs,
    ScanBackwardDescriptor,
    ScanBackwardPlan,
    ScanDescriptor,
    ScanPlan,
)
from baracuda.scan.api import cummax, cummin, cumprod, cumsum, logcumsumexp, scan_backward
from baracuda.softmax import (
    SparsemaxArgs,
    SparsemaxBackwardArgs,
    SparsemaxBackwardDescriptor,
    SparsemaxBackwardPlan,
    SparsemaxDescriptor,
    SparsemaxPlan,
)
from baracuda.softmax.api import sparsemax, sparsemax_backward
from baracuda.types import (
    BackendKind,
    BinaryKind,
    ElementKind,
    IndexElementKind,
    KernelSku,
    MathPrecision,
    OpCategory,
    PlanPreference,
    PrecisionGuarantee,
    ScanKind,
    SoftmaxKind,
    TieBreak,
)

__all__ = [
    "__version__",
    # functional API
    "lerp",
    "lerp_backward",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "scan_backward",
    "sparsemax",
    "sparsemax_backward",
    # plans
    "BinaryParamArgs",
    "BinaryParamBackwardArgs",
    "BinaryParamBackwardDescriptor",
    "BinaryParamBackwardPlan",
    "BinaryParamDescriptor",
    "BinaryParamPlan",
    "ScanArgs",
    "ScanBackwardArgs",
    "ScanBackwardDescriptor",
    "ScanBackwardPlan",
    "ScanDescriptor",
    "ScanPlan",
    "SparsemaxArgs",
    "SparsemaxBackwardArgs",
    "SparsemaxBackwardDescriptor",
    "SparsemaxBackwardPlan",
    "SparsemaxDescriptor",
    "SparsemaxPlan",
    # runtime
    "Stream",
    "Workspace",
    "TensorView",
    "cache_dir",
    "gpu_available",
    # vocabulary
    "BackendKind",
    "BinaryKind",
    "ElementKind",
    "IndexElementKind",
    "KernelSku",
    "MathPrecision",
    "OpCategory",
    "PlanPreference",
    "PrecisionGuarantee",
    "ScanKind",
    "SoftmaxKind",
    "TieBreak",
    # errors
    "BaracudaError",
    "BufferTooSmall",
    "CompileError",
    "CudaError",
    "InvalidProblem",
    "MisalignedOperand",
    "Unsupported",
    "WorkspaceTooSmall",
]


def __dir__() -> list[str]:
    return __all__
