"""What every plan shares: descriptor checks, tensor checks, the run skeleton.

``select`` validates the descriptor and loads the kernel; ``can_implement`` validates the
tensors; ``run`` binds (and so validates) the tensors, then enqueues. Each check raises a
typed error naming the plan, the field and both values.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import operator
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from baracuda._cuda.compiler import KernelSource
from baracuda._cuda.device import ensure_current, keeps_context
from baracuda._cuda.driver import check, device_count, driver
from baracuda._cuda.memory import Workspace
from baracuda._cuda.module import LoadedModule, load_module
from baracuda._cuda.replay import BoundSteps, active, capturing
from baracuda._cuda.retain import held, hold, release_done
from baracuda._cuda.stream import Stream
from baracuda._cuda.view import DL_CUDA, DL_CUDA_MANAGED, TensorView, view_of
from baracuda._dtypes import ELEMENTS, INDEX_ELEMENTS
from baracuda._interop import array_signature, current_stream_handle, same_stream
from baracuda.errors import InvalidProblem, MisalignedOperand, Unsupported, WorkspaceTooSmall
from baracuda.types import (
    ElementKind,
    IndexElementKind,
    KernelSku,
    MathPrecision,
    PlanPreference,
    PrecisionGuarantee,
)

__all__ = [
    "Plan",
    "check_shape",
    "normalize_axis",
    "check_element",
    "deterministic_precision",
    "MAX_RANK",
    "Switches",
    "no_switches",
]

MAX_RANK = 8

_DLPACK: dict[ElementKind | IndexElementKind, tuple[int, int]] = {
    **{k: v.dlpack for k, v in ELEMENTS.items()},
    **{k: v[2] for k, v in INDEX_ELEMENTS.items()},
}

D = TypeVar("D")
A = TypeVar("A")
V = TypeVar("V")


def _keep_arrays(stream: Stream, device_id: int, views: object) -> None:
    """After a run's launches on ``stream`` (of device ``device_id``, current): keep the
    arrays of ``views`` (a ``TensorView`` or a tuple of them, as ``_bind`` made them) marked
    ``keep`` alive until those launches have completed (``baracuda._cuda.retain``); drop
    those of earlier runs whose launches have."""
    items = views if isinstance(views, tuple) and not isinstance(views, TensorView) else (views,)
    owners = [v.owner for v in items if isinstance(v, TensorView) and v.keep]
    if not owners and not held():
        return
    if stream.is_capturing():
        # a captured graph reads its arrays at each replay, which the caller keeps alive (as
        # for any graph); and events may not be queried while a capture is under way
        return
    if owners:
        hold(stream, device_id, owners)
    else:
        release_done()


def check_shape(plan: str, field: str, shape: object, *, min_rank: int = 0) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(
        isinstance(d, int) and not isinstance(d, bool) for d in shape
    ):
        raise InvalidProblem(f"{plan}: {field} must be a tuple of ints (got {shape!r})")
    if not min_rank <= len(shape) <= MAX_RANK:
        raise Unsupported(
            f"{plan}: rank of {field} must be in [{min_rank}, {MAX_RANK}] (got {len(shape)})"
        )
    if any(d < 0 for d in shape):
        raise InvalidProblem(f"{plan}: {field} dims must be non-negative (got {shape})")
    return shape


def normalize_axis(plan: str, field: str, axis: object, rank: int) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise InvalidProblem(f"{plan}: {field} must be an int (got {axis!r})")
    if not -rank <= axis < rank:
        raise InvalidProblem(f"{plan}: {field} must be in [{-rank}, {rank}) (got {axis})")
    return axis % rank


def check_element(plan: str, field: str, element: object) -> ElementKind:
    if not isinstance(element, ElementKind):
        raise Unsupported(
            f"{plan}: {field} must be an ElementKind (one of "
            f"{', '.join(e.name for e in ElementKind)}) (got {element!r})"
        )
    return element


def deterministic_precision(element: ElementKind,
                            source: KernelSource | None = None) -> PrecisionGuarantee:  # fmt: skip
    """The guarantee of every kernel in this release: math and accumulation in the element's
    accumulator type (``source``'s, where it names one: ``KernelSource.double_acc``; else the
    dtype table's), no atomics, so results are deterministic."""
    acc = source.acc_c_type(element) if source is not None else ELEMENTS[element].acc_c_type
    f64 = acc == "double"
    return PrecisionGuarantee(
        math_precision=MathPrecision.F64 if f64 else MathPrecision.F32,
        accumulator=ElementKind.F64 if f64 else ElementKind.F32,
        bit_stable_on_same_hardware=True,
        deterministic=True,
    )


def _current_device() -> int:
    drv = driver()
    err, ctx = drv.cuCtxGetCurrent()
    if int(err) == 0 and int(ctx) != 0:
        return int(check(drv.cuCtxGetDevice(), "cuCtxGetDevice"))
    return 0


Switches = Callable[[], tuple[object, ...]]


def no_switches() -> tuple[object, ...]:
    """The switches of launch code that reads none (the elementwise launcher)."""
    return ()


@functools.cache
def _fields_of(cls: type) -> Callable[[object], tuple[Any, ...]] | None:
    """The getter of the fields of an args dataclass, in order (None for other classes)."""
    if not dataclasses.is_dataclass(cls):
        return None
    names = [f.name for f in dataclasses.fields(cls)]
    get = operator.attrgetter(*names)
    return get if len(names) > 1 else lambda a: (get(a),)


class Plan(abc.ABC, Generic[D, A, V]):
    """Base of every ``<Op>Plan``. ``D``: descriptor, ``A``: args, ``V``: the bound views."""

    NAME: ClassVar[str]
    _MAX_BOUND: ClassVar[int] = 64  # bound runs kept a plan (all dropped when full)

    def __init__(self, desc: D, stream: Stream, device_id: int, pref: PlanPreference) -> None:
        self.desc = desc
        self.device_id = device_id
        self.preference = pref
        self._stream = stream
        self._bound: dict[tuple[Any, ...], BoundSteps] = {}

    # -- construction -------------------------------------------------------------------
    @staticmethod
    def _open(
        stream: object, source: KernelSource, element: ElementKind
    ) -> tuple[Stream, int, LoadedModule]:
        """What every ``select`` needs once its descriptor is checked: the stream, its
        device, and the source's kernels for ``element`` loaded there (compiled or cached)."""
        s = Stream.wrap(stream)
        device_id = Plan._device_for(s)
        return s, device_id, load_module(source, element, device_id)

    @staticmethod
    def _device_for(stream: Stream) -> int:
        if device_count() == 0:
            raise Unsupported("no CUDA device is available (no driver, or no GPU)")
        dev = stream.device_id()
        if dev is None:
            dev = _current_device()
        ensure_current(dev)
        return dev

    # -- the contract ---------------------------------------------------------------------
    @keeps_context
    def can_implement(self, args: A) -> None:
        """Raise a typed error if ``args`` cannot be run by this plan; return None if they can."""
        self._bind(args, self._stream)

    def workspace_size(self) -> int:
        """Bytes of workspace ``run`` needs (0 when none)."""
        return 0

    @abc.abstractmethod
    def sku(self) -> KernelSku: ...

    def precision_guarantee(self) -> PrecisionGuarantee:
        return self.sku().precision_guarantee

    @keeps_context
    def run(self, stream: object, workspace: Workspace, args: A) -> None:
        """Validate ``args`` and enqueue the kernel(s) on ``stream``: no sync, no allocation.

        Runs on plain torch CUDA tensors or CuPy arrays on their framework's current stream
        are bound: a later run whose arrays have the signatures of a checked one (dtype,
        shape, strides, device, pointer mod 16: every check depends on these alone), on the
        same stream, with a workspace of the same size, and no two of them at one address,
        replays what that run enqueued with the new addresses, skipping the views and the
        launch code's choices."""
        bound = self._bound_key(stream, workspace, args)
        if bound is not None:
            hit = self._bound.get(bound[0])
            if hit is not None and hit.current():
                need = self.workspace_size()
                if need > 0:  # a bound key's size passed; its address may not
                    self._check_workspace(workspace, need)
                ensure_current(self.device_id)
                hit.enqueue(bound[2], bound[1], workspace.ptr if hit.uses_workspace else 0)
                self._replayed(hit.note)
                return
        s = Stream.wrap(stream)
        sdev = s.device_id()
        if sdev is not None and sdev != self.device_id:
            raise InvalidProblem(
                f"{self.NAME}: stream is on device {sdev} but the plan was selected for "
                f"device {self.device_id}"
            )
        views = self._bind(args, s)
        need = self.workspace_size()
        if need > 0:
            self._check_workspace(workspace, need)
        if bound is None:
            self._run_bound(s, workspace, views)
            _keep_arrays(s, self.device_id, views)
            return
        with capturing() as captured:
            self._run_bound(s, workspace, views)
        switches = self._switch_fn
        assert switches is not None  # a key is made only for a plan with switches
        got = BoundSteps.bind(captured, bound[1], need, switches, self.device_id, self._note())
        if got is None:  # a pointer neither the args' nor the workspace's
            return
        if len(self._bound) >= self._MAX_BOUND:
            self._bound.clear()
        self._bound[bound[0]] = got

    def _switches(self) -> Switches | None:
        """The function giving the values of the switches this plan's launch code reads (a
        bound run holds while they keep them); None: runs are not bound."""
        return None

    def _note(self) -> object:
        """What a checked run leaves on the plan for its caller to read (e.g. the variant
        run), kept with the bound run it becomes and restored by ``_replayed``."""
        return None

    def _replayed(self, note: object) -> None:
        """After a bound run: restore what its checked run left (``_note``)."""

    def _bound_key(self, stream: object, workspace: Workspace,
                   args: A) -> tuple[tuple[Any, ...], tuple[int, ...], int] | None:  # fmt: skip
        """(key, the fields' addresses, the stream's handle) of a run that may be bound, else
        None: a plan without switches, a capture already open (the functional API's),
        a stream that is not a ``Stream`` or an int, args that are not a dataclass of plain
        torch CUDA tensors or of CuPy arrays (or None), two at one address, or their
        framework's current stream on their device other than the run's (DLPack would order
        it before the run's)."""
        if self._switch_fn is None or active():
            return None
        t = type(stream)
        if t is Stream:
            handle = stream.handle  # type: ignore[attr-defined]
        elif t is int and stream >= 0:  # type: ignore[operator]
            handle = stream
        else:
            return None
        cls: type = type(args)
        fields = _fields_of(cls)
        if fields is None:
            return None
        sigs: list[object] = [cls, handle, workspace.nbytes, workspace.device_id]
        ptrs: list[int] = []
        fw, dev, last = "", -1, None
        for a in fields(args):
            if a is None:
                sigs.append(None)
                ptrs.append(0)
                continue
            got = array_signature(a)
            if got is None or (fw and got[0] != fw):
                return None
            fw, last = got[0], a
            sigs.append(got[1])
            ptrs.append(got[2])
            dev = got[1][3]
        live = [p for p in ptrs if p]
        if dev < 0 or len(set(live)) != len(live):
            return None
        cur = current_stream_handle(last, dev)
        if cur is None or not same_stream(cur, 1 if handle == 0 else handle):
            return None
        return tuple(sigs), tuple(ptrs), handle

    @functools.cached_property
    def _switch_fn(self) -> Switches | None:
        """``_switches()``, once a plan (a plan's launch code reads the same switches)."""
        return self._switches()

    def _run_bound(self, stream: Stream, workspace: Workspace, views: V) -> None:
        """Enqueue for ``views`` that ``_bind`` made (now, or before of arguments of the same
        signatures: device, shapes, dtypes, strides, alignment, the stream their framework
        orders them on), on a stream of the plan's device, with a workspace of
        ``workspace_size()`` bytes: every check ``run`` makes holds. The end of ``run``, and
        the package's functional API's bound calls (``baracuda._functional.BoundCalls``);
        not a public entry point."""
        ensure_current(self.device_id)
        self._launch(stream, workspace, views)

    # -- for subclasses ---------------------------------------------------------------------
    @abc.abstractmethod
    def _bind(self, args: A, stream: Stream) -> V:
        """Views of ``args``, every check done (shape, dtype, device, layout)."""

    @abc.abstractmethod
    def _launch(self, stream: Stream, workspace: Workspace, views: V) -> None: ...

    def _check_workspace(self, workspace: Workspace, need: int) -> None:
        if workspace.nbytes < need:
            raise WorkspaceTooSmall(
                f"{self.NAME}: workspace has {workspace.nbytes} bytes, needs {need} "
                "(plan.workspace_size())",
                needed=need,
                got=workspace.nbytes,
            )
        if workspace.device_id is not None and workspace.device_id != self.device_id:
            raise InvalidProblem(
                f"{self.NAME}: workspace is on device {workspace.device_id}, the plan on "
                f"device {self.device_id}"
            )
        if workspace.allocated and workspace.ptr % 256:  # the pool's scratch is aligned
            raise MisalignedOperand(
                f"{self.NAME}: workspace pointer {workspace.ptr:#x} must be 256-byte aligned"
            )

    def _view(
        self,
        field: str,
        obj: object,
        stream: Stream,
        shape: tuple[int, ...],
        element: ElementKind | IndexElementKind,
        *,
        output: bool = False,
    ) -> TensorView:
        """A checked view of ``obj``. On the per-call path: keep it to plain comparisons."""
        if obj is None:
            raise InvalidProblem(f"{self.NAME}: {field} is required (got None)")
        v = view_of(obj, stream.dlpack_stream)
        want = _DLPACK[element]
        if (
            (v.device_type != DL_CUDA and v.device_type != DL_CUDA_MANAGED)
            or v.device_id != self.device_id
            or v.shape != shape
            or v.dtype != want
            or v.ptr % (want[1] >> 3)
            or (output and (v.readonly or not v.is_non_overlapping()))
        ):
            self._explain(field, v, shape, element, want, output)
        return v

    def _explain(
        self,
        field: str,
        v: TensorView,
        shape: tuple[int, ...],
        element: ElementKind | IndexElementKind,
        want: tuple[int, int],
        output: bool,
    ) -> None:
        """Raise the typed error that says why ``v`` was refused."""
        if not v.is_cuda:
            raise InvalidProblem(
                f"{self.NAME}: {field} must be in CUDA device memory (got DLPack device type "
                f"{v.device_type}, e.g. a CPU tensor)"
            )
        if v.device_id != self.device_id:
            raise InvalidProblem(
                f"{self.NAME}: {field} is on device {v.device_id} but the plan was selected "
                f"for device {self.device_id}"
            )
        if tuple(v.shape) != tuple(shape):
            raise InvalidProblem(
                f"{self.NAME}: {field}.shape must be {tuple(shape)} (got {tuple(v.shape)})"
            )
        if v.dtype != want:
            raise InvalidProblem(
                f"{self.NAME}: {field} dtype must be {element.value} (DLPack {want}) "
                f"(got DLPack {v.dtype})"
            )
        if v.ptr % v.itemsize:
            raise MisalignedOperand(
                f"{self.NAME}: {field} pointer {v.ptr:#x} is not aligned to its "
                f"{v.itemsize}-byte element"
            )
        if output and v.readonly:
            raise InvalidProblem(f"{self.NAME}: {field} is read-only")
        if output:
            raise InvalidProblem(
                f"{self.NAME}: {field} has overlapping elements (shape {v.shape}, strides "
                f"{v.strides}); an output needs one address per element"
            )
