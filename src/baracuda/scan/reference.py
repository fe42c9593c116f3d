"""Axis scans and their backward against the array API standard: the CPU path and the oracle.

Every op is written as the kernels' monoid (same combine, same NaN/inf/zero rules) and run
with a blocked scan of whole-array operations (blocks of 16 scanned position by position,
all blocks at once, then the same over the block totals), so it is vectorised for any
shape: about two passes of elementwise work over the data plus a sixteenth of that per
level. The running extremum of cummax/cummin (and the scan of its winners' positions) is
exact whatever the order, so on NumPy and torch arrays it is their own accumulation
(``_running``); cumsum and cumprod (and the cumsum backward) on torch arrays are torch's own,
which on a CPU accumulates in double (``_sum_or_product``), and so are cummax/cummin where
torch's tie break gives the same winners (``_extremum``), and their backward is torch's
scatter-add in double (``_winners_gradient``), and the cumprod backward is in double from x's
running products where x holds no zero and they stay in range (``_prod_gradient``). The
logcumsumexp backward is in double with one rescaling a line where its exps stay in range, on
torch arrays in place (``_lse_gradient``), elsewhere in the standard's operations
(``_lse_gradient_std``). Half types are computed in float32 and rounded once, f64 in f64.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from array_api_compat import (
    device,
    is_array_api_strict_namespace,
    is_numpy_namespace,
    is_torch_namespace,
)

from baracuda._xp import from_acc, namespace, to_acc
from baracuda.errors import InvalidProblem
from baracuda.types import ScanKind, TieBreak

__all__ = [
    "scan",
    "scan_backward",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
]

State = tuple[Any, ...]
Combine = Callable[[State, State], State]


def _hillis_steele(xp: Any, state: State, combine: Combine) -> State:
    """Inclusive scan along the last axis of each array in ``state`` in ``ceil(log2 n)``
    whole-array steps; ``combine(earlier, later)``. A line of one position is its own scan:
    returned as copies, so that no result of the reference is its caller's input."""
    n = state[0].shape[-1]
    if n <= 1:  # torch's asarray(copy=True) warns on arrays that require grad: clone them
        if is_torch_namespace(xp):
            return tuple(s.clone() for s in state)
        return tuple(xp.asarray(s, copy=True) for s in state)
    d = 1
    while d < n:
        prev = tuple(s[..., : n - d] for s in state)
        cur = tuple(s[..., d:] for s in state)
        new = combine(prev, cur)
        state = tuple(xp.concat((s[..., :d], t), axis=-1) for s, t in zip(state, new, strict=True))
        d *= 2
    return state


_BLOCK = 16  # positions per block of the blocked scan


def _assoc_scan(xp: Any, state: State, combine: Combine) -> State:
    """Inclusive scan along the last axis of each array in ``state``; ``combine(earlier,
    later)``. Long axes are cut into blocks of ``_BLOCK``: each block scanned one position
    at a time, all blocks at once (``_BLOCK - 1`` combines of a ``_BLOCK``-th of the data,
    as a thread of the kernels scans its own elements), this scan over the block totals,
    then each block's elements combined with the inclusive total of the blocks before it (a
    partial last block likewise, short axes by ``_hillis_steele``): about two whole-array
    combines, not ``log2 n``. On a 2-core CPU, f32 512 x 4096: cumsum 11.5 -> 5.2 ms,
    logcumsumexp 37 -> 17 ms against a scan of whole blocks by Hillis-Steele."""
    n = state[0].shape[-1]
    if n <= 4 * _BLOCK:
        return _hillis_steele(xp, state, combine)
    lead = tuple(state[0].shape[:-1])
    nb = n // _BLOCK
    m = nb * _BLOCK
    blocks = tuple(xp.reshape(s[..., :m], (*lead, nb, _BLOCK)) for s in state)
    acc = tuple(b[..., 0] for b in blocks)  # (..., nb): every block's running state
    steps = [acc]
    for k in range(1, _BLOCK):
        acc = combine(acc, tuple(b[..., k] for b in blocks))
        steps.append(acc)
    scanned = tuple(xp.stack([st[i] for st in steps], axis=-1) for i in range(len(state)))
    carry = _assoc_scan(xp, acc, combine)  # the blocks' inclusive totals, (..., nb)
    shape = (*lead, nb - 1, _BLOCK)
    rest = combine(
        tuple(xp.broadcast_to(xp.expand_dims(c[..., :-1], axis=-1), shape) for c in carry),
        tuple(b[..., 1:, :] for b in scanned),
    )
    body = tuple(
        xp.reshape(xp.concat((b[..., :1, :], r), axis=-2), (*lead, m))
        for b, r in zip(scanned, rest, strict=True)
    )
    if m == n:
        return body
    tail = _hillis_steele(xp, tuple(s[..., m:] for s in state), combine)
    tshape = (*lead, n - m)
    tail = combine(tuple(xp.broadcast_to(c[..., -1:], tshape) for c in carry), tail)
    return tuple(xp.concat((b, t), axis=-1) for b, t in zip(body, tail, strict=True))


def _exclusive(xp: Any, incl: State, identity: tuple[float, ...]) -> State:
    out = []
    for s, e in zip(incl, identity, strict=True):
        head = xp.full((*s.shape[:-1], 1), e, dtype=s.dtype, device=device(s))
        out.append(xp.concat((head, s[..., :-1]), axis=-1))
    return tuple(out)


def _to_last(xp: Any, a: Any, axis: int, reverse: bool) -> Any:
    a = xp.moveaxis(a, axis, -1)
    return xp.flip(a, axis=-1) if reverse else a


def _from_last(xp: Any, a: Any, axis: int, reverse: bool) -> Any:
    if reverse:
        a = xp.flip(a, axis=-1)
    return xp.moveaxis(a, -1, axis)


def _c_order(xp: Any, a: Any, dtype: Any = None) -> Any:
    """``a`` (in ``dtype`` where given) in C order on NumPy arrays, copied only where it is not
    already: NumPy's accumulations along a strided or flipped last axis (a scan along another
    axis moved last, or in reverse) run up to 3x slower than along a contiguous one, and its
    elementwise results keep their inputs' layout (f32 512 x 4096 along axis 0 on a 2-core
    CPU: ``np.maximum.accumulate`` 21.5 ms, 6.7 along axis 1). Other namespaces: ``a`` as it
    is (``astype`` to ``dtype``). Not for the blocked scans of cumsum, cumprod and
    logcumsumexp, which measured faster on the strided views (cumsum along axis 0: 5.97 ms
    against 12.4 with the copy)."""
    if is_numpy_namespace(xp):
        import numpy as np

        return np.ascontiguousarray(a, dtype=dtype)
    return a if dtype is None else xp.astype(a, dtype)


def _axis(op: str, x: Any, axis: int) -> int:
    nd = len(x.shape)
    if nd == 0:
        raise InvalidProblem(f"baracuda.{op}: x must have rank >= 1 (got a 0-d array)")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -nd <= axis < nd:
        raise InvalidProblem(f"baracuda.{op}: axis must be an int in [{-nd}, {nd}) (got {axis!r})")
    return axis % nd


def _log_add_exp(xp: Any, a: Any, b: Any) -> Any:
    """``log(exp(a) + exp(b))`` as the kernels compute it: ``max + log1p(exp(min - max))``.
    ``maximum`` propagates NaN (the standard's rule), so a NaN operand gives NaN; ``min -
    max`` is NaN otherwise only for two equal infinities, which give themselves."""
    mx = xp.maximum(a, b)
    d = xp.minimum(a, b) - mx  # <= 0; -inf where exactly one operand is infinite
    out = mx + xp.log1p(xp.exp(d))
    return xp.where(xp.isnan(d) & ~xp.isnan(mx), mx, out)


def _rescale(xp: Any, a: Any, b: Any) -> Any:
    """``exp(a - b)``, and 1 where ``a == b`` (so equal infinities give 1, not NaN)."""
    same = a == b
    return xp.where(same, xp.ones_like(a), xp.exp(xp.where(same, xp.zeros_like(a), a - b)))


def _shift_sum(xp: Any, s: Any, r: Any, t: Any, q: Any) -> Any:
    """``s exp(r - m) + t exp(q - m)`` with ``m = min(r, q)``: the term of the larger of
    ``r`` and ``q`` is scaled by ``exp(-|r - q|)``, the other by 1 (equal ``r`` and ``q``,
    infinities too, scale by 1); NaN where ``r`` or ``q`` is NaN."""
    same = r == q
    f = xp.exp(xp.where(same, xp.zeros_like(r), -xp.abs(r - q)))
    return xp.where(r <= q, s + t * f, s * f + t)


def _wins(xp: Any, r: Any, l: Any, is_min: bool, last: bool) -> Any:  # noqa: E741
    """Whether ``r`` (later in scan order) takes the running winner from ``l``: a NaN always
    does (the latest NaN wins), else the tie break's comparison. A comparison with a NaN
    ``l`` is false (IEEE 754, which the array API standard follows), so a NaN ``l`` keeps it
    against any number without a test of its own."""
    cmp = (r <= l if last else r < l) if is_min else r >= l if last else r > l
    return xp.isnan(r) | cmp


def _running(xp: Any, a: Any, is_min: bool) -> Any:
    """The running minimum / maximum along the last axis of ``a``, NaN sticking: NumPy's and
    torch's own accumulations where ``xp`` is theirs (both exact, so the same values as the
    blocked scan; 4-8x faster on a CPU), else the blocked scan of ``minimum`` / ``maximum``."""
    if is_numpy_namespace(xp):
        import numpy as np

        return (np.minimum if is_min else np.maximum).accumulate(a, axis=-1)
    if is_torch_namespace(xp):
        import torch

        return (torch.cummin if is_min else torch.cummax)(a, dim=-1).values
    pick = xp.minimum if is_min else xp.maximum
    return _assoc_scan(xp, (a,), lambda e, t: (pick(e[0], t[0]),))[0]


def _wins_along(xp: Any, xa: Any, is_min: bool, last: bool,
                run: Any = None) -> tuple[Any, Any]:  # fmt: skip
    """The running extremum along the last axis of ``xa`` (scan order), and whether each
    position wins against the extremum before it (its own running winner):
    - the running extremum: ``run`` where the caller has it, else by ``maximum`` /
      ``minimum`` (NaN sticks, as in the kernels), or where the namespace has no
      ``take_along_axis`` (before the 2024.12 standard) by the kernels' monoid on the values
      alone (a later value wins by ``_wins``), whose values are the winners' own, signed
      zeros included;
    - each position's win: ``_wins`` (NaN, then the tie break's comparison); the first
      position always wins.
    Both on ``xa`` in C order (``_c_order``; f32 512 x 4096 along axis 0 on a 2-core CPU:
    cummax 46.4 -> 15.2 ms with ``_win_positions``)."""
    if run is None:
        xa = _c_order(xp, xa)
    if run is None and getattr(xp, "take_along_axis", None) is not None:
        run = _running(xp, xa, is_min)
    elif run is None:
        (run,) = _assoc_scan(
            xp, (xa,),
            lambda e, t: (xp.where(_wins(xp, t[0], e[0], is_min, last), t[0], e[0]),),
        )  # fmt: skip
    first = xp.ones((*xa.shape[:-1], 1), dtype=xp.bool, device=device(xa))
    won = xp.concat((first, _wins(xp, xa[..., 1:], run[..., :-1], is_min, last)), axis=-1)
    return run, won


def _extremum(xp: Any, xa: Any, is_min: bool, last: bool, reverse: bool) -> tuple[Any, Any]:
    """Running (value, physical index) along the last axis of ``xa`` (already flipped): on
    torch arrays torch's own where it picks the same winners; else in two scans of one array
    each instead of one of (value, index) pairs: ``_wins_along``, then the latest win's scan
    position by a scan of ``maximum``, and the values taken at those positions (the winner's
    own, signed zeros included)."""
    n = xa.shape[-1]
    if is_torch_namespace(xp):
        # torch's own cummax/cummin is this monoid with the last tie break: a NaN always
        # wins, else x >= (<=) the running value, against a NaN none (f32 512 x 4096 on a
        # 2-core CPU: 1.1 ms against 8-19 for the scans below). The first tie break wins at
        # the same positions unless a value equals the running extremum before it (signed
        # zeros included; NaN equals nothing): without such a tie its result is the same
        # (2.0 ms with the comparison), with one it takes the scans below.
        import torch

        v, at = (torch.cummin if is_min else torch.cummax)(xa, dim=-1)
        if last or not bool((xa[..., 1:] == v[..., :-1]).any()):
            return v, (n - 1 - at) if reverse else at
        run, won = _wins_along(xp, xa, is_min, last, v)  # v compares as the extremum does
    else:
        run, won = _wins_along(xp, xa, is_min, last)
    at = _win_positions(xp, won)
    if is_torch_namespace(xp):  # its take_along_axis: 16 ms, gather 0.4
        import torch  # (512 x 4096 f32 on a 2-core CPU)

        v = torch.gather(xa, xa.ndim - 1, at)
    else:
        # the winners' own values: the running extremum's but for signed zeros (which the
        # comparisons tie) and NaN payloads, so taken only where the extremum holds either
        # (NumPy f32 512 x 4096 on a 2-core CPU: 5.4 ms a take)
        take = getattr(xp, "take_along_axis", None)
        if take is not None and bool(xp.any((run == 0) | xp.isnan(run))):
            v = take(xa, at, axis=-1)
        else:
            v = run
    return v, (n - 1 - at) if reverse else at


def _win_positions(xp: Any, won: Any) -> Any:
    """The scan position (int64) of each position's latest win along the last axis of
    ``won``, whose first position always wins: ``_win_runs`` where it applies, else a running
    maximum of the wins' positions."""
    at = _win_runs(xp, won)
    if at is not None:
        return at
    n = won.shape[-1]
    # scan positions in int32 where they fit (half the bytes of the scan)
    q = xp.arange(n, dtype=xp.int32 if n < 2**31 else xp.int64, device=device(won))
    at = _running(xp, xp.astype(won, q.dtype) * q, False)  # a win's position, else 0
    return xp.astype(at, xp.int64)


def _win_runs(xp: Any, won: Any) -> Any:
    """``_win_positions`` on NumPy arrays where at most an eighth of the positions win (the
    usual case: a random line of n positions has about ln n wins): each win's position
    repeated over its run (``flatnonzero``, ``repeat``; f32 512 x 4096 on a 2-core CPU:
    0.6-2 ms where 1-3 % of the positions win, against 7 for the scan, which is faster from
    about a fifth of them on). None elsewhere (other namespaces, more wins, no element)."""
    if not is_numpy_namespace(xp) or won.size == 0:
        return None
    import numpy as np

    if 8 * np.count_nonzero(won) > won.size:
        return None
    f = np.flatnonzero(won)  # the wins in C order: every line's first position is one
    return np.repeat(f % won.shape[-1], np.diff(f, append=won.size)).reshape(won.shape)


def _sum_or_product(xp: Any, a: Any, product: bool) -> Any:
    """The running sum / product along the last axis of ``a``: on torch arrays torch's own
    (on a CPU it accumulates in double and rounds once: f32 512 x 4096 on a 2-core CPU 0.8
    against 3.0 ms, and over 4 x 2^20 N(0, 1) 6.0e-8 against 2.6e-4 of max(1, |ref|) for the
    blocked scan); else the blocked scan (on NumPy as fast as ``np.cumsum``, and more
    accurate than its float32 accumulation: 2.6e-4 against 3.2e-3 there). Infinities and NaN
    are IEEE either way; a double running value can pass a float32 overflow (or underflow)
    and come back, which is the exact result."""
    if is_torch_namespace(xp):
        import torch

        return (torch.cumprod if product else torch.cumsum)(a, dim=-1)
    if product:
        if (is_numpy_namespace(xp) or is_array_api_strict_namespace(xp)) and (
            a.dtype == xp.float32
        ):
            # f32 products in double, as the kernels (_kernels._DOUBLE_F32_OPS): a blocked f32
            # product drifts over long axes (4 x 2^20 factors near 1: 1.5e-4 of |y| against
            # 6.0e-8; a sequential f32 product 4.1e-5)
            return _assoc_scan(xp, (xp.astype(a, xp.float64),), lambda e, t: (e[0] * t[0],))[0]
        return _assoc_scan(xp, (a,), lambda e, t: (e[0] * t[0],))[0]
    return _assoc_scan(xp, (a,), lambda e, t: (e[0] + t[0],))[0]


def _linrec(xp: Any, a: Any, b: Any) -> Any:
    """Exclusive ``b`` of the linear recurrence h = a h_prev + b (scan along the last axis)."""

    def combine(e: State, t: State) -> State:
        return e[0] * t[0], t[0] * e[1] + t[1]

    inc = _assoc_scan(xp, (a, b), combine)
    return _exclusive(xp, inc, (1.0, 0.0))[1]


def _segsum(xp: Any, flag: Any, g: Any) -> Any:
    """Exclusive segmented sums of ``g`` along the last axis, each segment starting after a
    ``flag`` (the sum restarts at 0 there): ``_linrec`` of a = 0 at flags, 1 elsewhere, whose
    combine selects where ``_linrec`` multiplies, so that an infinite or NaN ``g`` stays in its
    own segment (0 * inf is NaN)."""
    zero = xp.zeros_like(g)

    def combine(e: State, t: State) -> State:
        return e[0] & t[0], xp.where(t[0], e[1], xp.zeros_like(e[1])) + t[1]

    inc = _assoc_scan(xp, (~flag, xp.where(flag, zero, g)), combine)
    return _exclusive(xp, inc, (True, 0.0))[1]


def _quiet(xp: Any) -> AbstractContextManager[Any]:
    """NumPy's floating-point warnings off (NumPy's arrays and array-api-strict's, which are
    NumPy's underneath): the ops define their infinities and NaN (an ``inf - inf`` inside is
    a case they select away, not an error to report)."""
    if is_numpy_namespace(xp) or is_array_api_strict_namespace(xp):
        import numpy as np

        return np.errstate(invalid="ignore", over="ignore", divide="ignore")
    return nullcontext()


def scan(kind: ScanKind, x: Any, axis: int = -1, reverse: bool = False,
         tie_break: TieBreak = TieBreak.FIRST) -> Any:  # fmt: skip
    """Inclusive scan of ``kind`` along ``axis``: ``y`` (and ``(y, indices)`` for cummax /
    cummin, int64 physical positions of the running winners)."""
    with _quiet(namespace(x)):
        return _scan(kind, x, axis, reverse, tie_break)


def _scan(kind: ScanKind, x: Any, axis: int, reverse: bool, tie_break: TieBreak) -> Any:
    xp = namespace(x)
    ax = _axis(kind.value, x, axis)
    if x.shape[ax] == 0 or 0 in x.shape:
        y = xp.empty(x.shape, dtype=x.dtype, device=device(x))
        if kind in (ScanKind.CUMMAX, ScanKind.CUMMIN):
            return y, xp.empty(x.shape, dtype=xp.int64, device=device(x))
        return y
    xa = _to_last(xp, to_acc(xp, x), ax, reverse)
    if kind in (ScanKind.CUMSUM, ScanKind.CUMPROD):
        ya = _sum_or_product(xp, xa, kind is ScanKind.CUMPROD)
    elif kind is ScanKind.LOGCUMSUMEXP:
        (ya,) = _assoc_scan(xp, (xa,), lambda e, t: (_log_add_exp(xp, e[0], t[0]),))
    else:
        v, i = _extremum(xp, xa, kind is ScanKind.CUMMIN, tie_break is TieBreak.LAST, reverse)
        return (from_acc(xp, _from_last(xp, v, ax, reverse), x),
                _from_last(xp, i, ax, reverse))  # fmt: skip
    return from_acc(xp, _from_last(xp, ya, ax, reverse), x)


def scan_backward(kind: ScanKind, dy: Any, *, x: Any = None, y: Any = None, axis: int = -1,
                  reverse: bool = False, tie_break: TieBreak = TieBreak.FIRST) -> Any:  # fmt: skip
    """``dx``, the gradient of ``scan(kind, x, axis, reverse)`` for upstream gradient ``dy``.

    Saved tensors: ``x`` for cumprod/cummax/cummin/logcumsumexp, ``y`` for
    cumprod/logcumsumexp (the forward output, read as given). cumprod is exact with zeros
    (no division); logcumsumexp gives 0 where ``x = -inf``.
    """
    with _quiet(namespace(dy)):
        return _scan_backward(kind, dy, x, y, axis, reverse, tie_break)


def _scan_backward(kind: ScanKind, dy: Any, x: Any, y: Any, axis: int, reverse: bool,
                   tie_break: TieBreak) -> Any:  # fmt: skip
    op = f"scan_backward({kind.value})"
    xp = namespace(dy)
    ax = _axis(op, dy, axis)
    for name, t, needed in (
        ("x", x, kind is not ScanKind.CUMSUM),
        ("y", y, kind in (ScanKind.CUMPROD, ScanKind.LOGCUMSUMEXP)),
    ):
        if needed and t is None:
            raise InvalidProblem(f"baracuda.{op}: the saved forward tensor {name} is required")
        if needed and tuple(t.shape) != tuple(dy.shape):
            raise InvalidProblem(
                f"baracuda.{op}: {name}.shape must equal dy.shape {tuple(dy.shape)} "
                f"(got {tuple(t.shape)})"
            )
    if 0 in dy.shape:
        return xp.empty(dy.shape, dtype=dy.dtype, device=device(dy))
    back = not reverse  # the backward scans the other way

    def last(a: Any) -> Any:
        return _to_last(xp, to_acc(xp, a), ax, back)

    if kind in (ScanKind.CUMMAX, ScanKind.CUMMIN) and is_torch_namespace(xp):
        return _winners_gradient(xp, dy, x, ax, reverse, kind is ScanKind.CUMMIN,
                                 tie_break is TieBreak.LAST)  # fmt: skip
    if kind is ScanKind.LOGCUMSUMEXP:
        dx = (_lse_gradient if is_torch_namespace(xp) else _lse_gradient_std)(
            xp, dy, x, y, ax, reverse)  # fmt: skip
        if dx is not None:
            return dx
    if kind is ScanKind.CUMPROD and is_torch_namespace(xp):
        dx = _prod_gradient(xp, dy, x, y, ax, reverse)
        if dx is not None:
            return dx
    g = last(dy)
    if kind is ScanKind.CUMSUM:
        out = _sum_or_product(xp, g, False)
    elif kind is ScanKind.CUMPROD:
        xa, ya = last(x), last(y)
        q_next = _linrec(xp, xa, xa * g)  # Q_{i+1}
        # y_{i-1}: the next element in backward order; 1 at the forward start
        one = xp.ones((*ya.shape[:-1], 1), dtype=ya.dtype, device=device(ya))
        y_prev = xp.concat((ya[..., 1:], one), axis=-1)
        out = y_prev * (g + q_next)
    elif kind is ScanKind.LOGCUMSUMEXP:
        xa, ya = last(x), last(y)

        def combine(e: State, t: State) -> State:
            return _shift_sum(xp, e[0], e[1], t[0], t[1]), xp.minimum(e[1], t[1])

        s, r = _assoc_scan(xp, (g, ya), combine)
        scale = _rescale(xp, xa, r)
        out = xp.where(xa == -xp.inf, xp.zeros_like(xa), scale * s)
    else:
        xf = _to_last(xp, to_acc(xp, x), ax, reverse)  # forward order
        _, won = _wins_along(xp, xf, kind is ScanKind.CUMMIN, tie_break is TieBreak.LAST)
        flag = xp.flip(won, axis=-1)  # each position its own winner, in backward order
        # in C order: the segmented sums' steps along strided or flipped lines were slower
        # (f32 4096 x 512 along axis 0 on a 2-core CPU: 48.9 -> 38.4 ms)
        g, flag = _c_order(xp, g), _c_order(xp, flag)
        out = xp.where(flag, g + _segsum(xp, flag, g), xp.zeros_like(g))
    return from_acc(xp, _from_last(xp, out, ax, back), dy)


def _winners_gradient(xp: Any, dy: Any, x: Any, ax: int, reverse: bool, is_min: bool,
                      last: bool) -> Any:  # fmt: skip
    """The cummax/cummin backward on torch arrays: each output's gradient goes to its running
    winner, by torch's ``scatter_add`` of ``dy`` onto the winners' positions, in double and
    rounded once (as torch's cumsum accumulates on a CPU). f32 512 x 4096 on a 2-core CPU:
    5.5-7.4 ms against 12.1-14.2 for the segmented sums of the other arrays, and 7.6e-6
    against 2.3e-5 off float64. Sums with inf or NaN are IEEE's whatever the order."""
    import torch

    _, at = _extremum(xp, _to_last(xp, to_acc(xp, x), ax, reverse), is_min, last, False)
    g = _to_last(xp, dy, ax, reverse).to(torch.float64)
    out = torch.zeros_like(g).scatter_add_(-1, at, g)
    return from_acc(xp, _from_last(xp, out, ax, reverse), dy)


def _sums_on(w: Any, reverse: bool) -> Any:
    """The sums of the torch array ``w`` (lines in their physical order, along its last axis)
    from each position on in scan order: from the line's physical start in a reverse scan,
    else from its end, so each sum holds only its own terms. In place in ``w`` where the scan
    runs from the start."""
    return w.cumsum_(-1) if reverse else w.flip(-1).cumsum_(-1).flip(-1)


# the largest spread of y (and of x above y's least) along a line that the logcumsumexp
# backward on torch arrays takes in one rescaling: its exps stay within e^+-300 (about
# 10^+-130), so a term dy exp(c - y) stays a normal double for any |dy| above 10^-177 (no
# digits lost to denormals before exp(x - c) scales it back up), and a sum of them
# overflows only past 10^178 (double's range ends near e^+-708)
_LSE_SPAN = 300.0


def _lse_gradient(xp: Any, dy: Any, x: Any, y: Any, ax: int, reverse: bool) -> Any:
    """The logcumsumexp backward on torch arrays, ``dx_i = sum_{j >= i} dy_j exp(x_i - y_j)``
    (``j`` from ``i`` on in scan order), in double with one rescaling a line: with ``c`` the
    least ``y`` of the line, ``exp(x_i - c)`` times the sum from the line's end of
    ``dy_j exp(c - y_j)`` (torch's cumsum, from the end, so each sum holds only its own
    terms), rounded once; 0 where ``x = -inf``. None where any line's ``y`` is not finite,
    ``x`` is NaN, or ``y`` (or ``x``) spreads more than ``_LSE_SPAN`` above ``c``: the caller
    then takes the rescaling scan for the whole call. f32 512 x 4096 on a 2-core CPU, along
    axis 1, glibc's allocator told to keep its memory: 10.3-10.6 ms (15.3-17.0 with a new
    temporary a step; with glibc as it comes 10.5-22.8 against 15.7-52.1) against 23.5-26.1
    for the scan (torch autograd's own backward: 65.8-68.4)."""
    import torch

    # the lines in their physical order (no flips: c and the spread do not depend on it), x
    # and y copied to double; the steps below work in place in those copies (a fresh 2-D
    # temporary is a new allocation that glibc may map and fault in again on every call)
    xa, ya = (_to_last(xp, a, ax, False).to(torch.float64, copy=True) for a in (x, y))
    c = ya.amin(dim=-1, keepdim=True)
    top = torch.maximum(ya.amax(dim=-1, keepdim=True), xa.amax(dim=-1, keepdim=True))
    # one test on the lines' extremes: amin, amax and maximum carry NaN through, and an
    # infinite y or x (but x = -inf) makes top - c infinite or NaN, so any line with a NaN, an
    # infinite y, or a spread past _LSE_SPAN fails it
    if not bool((top - c <= _LSE_SPAN).all()):
        return None
    zero = xa == -torch.inf
    # dy exp(c - y), in y's copy (dy promoted to double as it is multiplied)
    w = ya.neg_().add_(c).exp_().mul_(_to_last(xp, dy, ax, False))
    tail = _sums_on(w, reverse)
    out = xa.sub_(c).exp_().mul_(tail).masked_fill_(zero, 0.0)  # exp(x - c) tail, in x's copy
    return from_acc(xp, _from_last(xp, out, ax, False), dy)


def _lse_gradient_std(xp: Any, dy: Any, x: Any, y: Any, ax: int, reverse: bool) -> Any:
    """``_lse_gradient`` in the standard's operations, for the other namespaces (NumPy and
    array-api-strict get the same values bit for bit): each step a new array, and the tests
    of NaN and infinities element by element (the standard does not say that ``min`` and
    ``max`` carry NaN). None where the namespace has no ``cumulative_sum`` (before the
    2023.12 standard). NumPy f32 512 x 4096 on a 2-core CPU along axis 1: 24.2-24.4 ms
    against 47.4-48.9 for the rescaling scan, 3.8e-8 against 2.2e-7 off float64 (of the
    largest |dx|)."""
    cumsum = getattr(xp, "cumulative_sum", None)
    if cumsum is None:
        return None
    # in C order: on NumPy every step along a strided last axis was slower (f32 4096 x 512
    # along axis 0 on a 2-core CPU: 60.7 -> 35.7 ms)
    g, xa, ya = (_c_order(xp, _to_last(xp, a, ax, False), xp.float64) for a in (dy, x, y))
    c = xp.min(ya, axis=-1, keepdims=True)
    top = xp.maximum(xp.max(ya, axis=-1, keepdims=True), xp.max(xa, axis=-1, keepdims=True))
    if not (bool(xp.all(xp.isfinite(ya))) and not bool(xp.any(xp.isnan(xa)))
            and bool(xp.all(top - c <= _LSE_SPAN))):  # fmt: skip
        return None
    w = g * xp.exp(c - ya)
    # the sums from j = i on in scan order: from the line's physical start in a reverse scan,
    # else from its end
    tail = (cumsum(w, axis=-1) if reverse
            else xp.flip(cumsum(xp.flip(w, axis=-1), axis=-1), axis=-1))  # fmt: skip
    out = xp.where(xa == -xp.inf, xp.zeros_like(xa), xp.exp(xa - c) * tail)
    return from_acc(xp, _from_last(xp, out, ax, False), dy)


# the least running product (in magnitude) that the cumprod backward on torch arrays takes
# in double: double's least normal number, so that every ratio of two of them keeps its digits
_PROD_TINY = 2.2250738585072014e-308


def _prod_gradient(xp: Any, dy: Any, x: Any, y: Any, ax: int, reverse: bool) -> Any:
    """The cumprod backward on torch arrays without a zero in ``x``: ``dx_i = y_{i-1} (dy_i +
    Q_{i+1})`` (the linear recurrence's form, ``y`` the saved output read as given, 1 before
    the scan's start) with ``dy_i + Q_{i+1} = S_i / P_i``, ``P`` the running product of ``x``
    and ``S_i`` the sum from ``i`` on in scan order of ``dy_j P_j`` (torch's cumsum, from the
    line's end, so each sum holds only its own terms): in double, rounded once. None for f64
    arrays (their quotients could lose digits that f64 outputs keep) and where any running
    product leaves double's normal range (a zero in ``x``, or NaN, included): the caller then
    takes the linear recurrence, which is exact with zeros, for the whole call. f32 512 x
    4096 (x ~ 1 + 0.01 N(0, 1)) on a 2-core CPU along axis 1: 7.0-9.7 ms against 13.0-16.4
    for the recurrence in f32, and 4.1e-8 against 2.0e-6 off float64 (of the largest |dx|)."""
    import torch

    if x.dtype == torch.float64:
        return None
    # the lines in their physical order; the running products in scan order (from the line's
    # end in a reverse scan)
    xa = _to_last(xp, x, ax, False).to(torch.float64)
    p = xa.flip(-1).cumprod(-1).flip(-1) if reverse else xa.cumprod(-1)
    mag = p.abs()
    lo, hi = torch.aminmax(mag)
    if not (bool(lo >= _PROD_TINY) and bool(hi < torch.inf)):  # NaN fails both
        return None
    w = torch.mul(p, _to_last(xp, dy, ax, False), out=mag)  # dy_j P_j, in |P|'s array
    s = _sums_on(w, reverse)
    out = s.div_(p)
    # y_{i-1}: y at the physical position before (after, in a reverse scan)
    ya = _to_last(xp, y, ax, False)
    if reverse:
        out[..., :-1].mul_(ya[..., 1:])
    else:
        out[..., 1:].mul_(ya[..., :-1])
    return from_acc(xp, _from_last(xp, out, ax, False), dy)


def cumsum(x: Any, axis: int = -1, reverse: bool = False) -> Any:
    return scan(ScanKind.CUMSUM, x, axis, reverse)


def cumprod(x: Any, axis: int = -1, reverse: bool = False) -> Any:
    return scan(ScanKind.CUMPROD, x, axis, reverse)


def cummax(x: Any, axis: int = -1, reverse: bool = False,
           tie_break: TieBreak = TieBreak.FIRST) -> tuple[Any, Any]:  # fmt: skip
    out: tuple[Any, Any] = scan(ScanKind.CUMMAX, x, axis, reverse, tie_break)
    return out


def cummin(x: Any, axis: int = -1, reverse: bool = False,
           tie_break: TieBreak = TieBreak.FIRST) -> tuple[Any, Any]:  # fmt: skip
    out: tuple[Any, Any] = scan(ScanKind.CUMMIN, x, axis, reverse, tie_break)
    return out


def logcumsumexp(x: Any, axis: int = -1, reverse: bool = False) -> Any:
    return scan(ScanKind.LOGCUMSUMEXP, x, axis, reverse)
