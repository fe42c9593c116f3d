"""The shapes of ``check`` and ``bench`` cases; each family lists its own in ``cases.py``.

``python -m baracuda check`` runs every ``CheckCase`` on the best backend available;
``python -m baracuda bench`` times every ``BenchCase`` beside its peers (torch eager,
``torch.compile``...) in the same run on the same card.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from baracuda.types import ElementKind

__all__ = ["CheckContext", "CheckCase", "BenchCase", "BenchSetup", "max_rel_err", "copy_peer"]


@dataclass
class CheckContext:
    """What a check case needs to know about the backend under test.

    ``backend``: "cuda" (arrays are CUDA tensors of ``framework``) or "array-api" (numpy).
    ``to_device(float64_numpy_array, element)`` makes an input of that element type on the
    backend; ``to_numpy(array)`` reads any result back as a float64 numpy array (so a case
    computes its float64 truth from the inputs as rounded). ``rng``: ``numpy.random.Generator``.
    """

    backend: str
    framework: str
    to_device: Callable[[Any, ElementKind], Any]
    to_numpy: Callable[[Any], Any]
    rng: Any


@dataclass(frozen=True)
class CheckCase:
    """One op and dtype: ``run(ctx)`` returns (max error, tolerance) against a float64 truth.

    The error is max |out - truth| / max(1, |truth|) elementwise unless the case says
    otherwise in ``metric``.
    """

    op: str
    element: ElementKind
    run: Callable[[CheckContext], tuple[float, float]]
    metric: str = "max rel err"


@dataclass
class BenchSetup:
    """What a bench case's ``setup()`` returns: callables that each run the op once.

    ``ours`` is baracuda; ``peers`` maps a provider name ("torch", "torch.compile") to its
    callable. ``bytes_moved`` is the minimal traffic: each input read once, each output
    written once (write the count out in a comment where it is built).
    """

    ours: Callable[[], object]
    peers: dict[str, Callable[[], object]]
    bytes_moved: int
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchCase:
    """One op x shape x dtype. ``setup()`` allocates (on CUDA, through torch) and returns a
    ``BenchSetup``; it is called once, right before timing, so memory is freed between cases."""

    op: str
    shape: tuple[int, ...]
    element: ElementKind
    setup: Callable[[], BenchSetup]
    label: str = ""


def max_rel_err(out: Any, truth: Any) -> float:
    """max |out - truth| / max(1, |truth|) over the elements, as float64.

    NaN must stand exactly where the truth has NaN (else inf); equal infinities count as
    exact; a shape mismatch is inf; an empty result is exact.
    """
    import numpy as np

    o, t = np.asarray(out, np.float64), np.asarray(truth, np.float64)
    if o.shape != t.shape:
        return float("inf")
    if o.size == 0:
        return 0.0
    if not np.array_equal(np.isnan(o), np.isnan(t)):
        return float("inf")
    with np.errstate(invalid="ignore"):
        err = np.abs(o - t) / np.maximum(1.0, np.abs(t))
    return float(np.max(np.where(np.isnan(t) | (o == t), 0.0, err)))


COPY_PEER = "copy_ (same bytes)"  # a roofline beside the peers: left out of the speed-ups


def copy_peer(nbytes: int, device: str = "cuda") -> Callable[[], object]:
    """A ``copy_`` of ``nbytes`` bytes read and as many written (a case that moves ``2 *
    nbytes``): its floor at that size, timed beside its peers in the same run."""
    import torch

    src = torch.empty(nbytes, device=device, dtype=torch.uint8)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)
