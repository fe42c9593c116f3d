"""Shape and stride arithmetic shared by the plans (pure Python, no CUDA)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["numel", "contiguous_strides", "coalesce", "split_axis"]


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    acc, out = 1, []
    for d in reversed(shape):
        out.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(out))


def coalesce(
    shape: Sequence[int], strides: Sequence[Sequence[int]]
) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Drop size-1 dims and merge neighbours that are contiguous in every tensor.

    Returns the shortest (shape, per-tensor strides) addressing the same elements in the same
    row-major order, so kernels unravel as few dims as possible. A 0-d result becomes (1,).
    """
    dims = [i for i, d in enumerate(shape) if d != 1]
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for i in dims:
        if out_shape and all(
            st[-1] == s[i] * shape[i] for st, s in zip(out_strides, strides, strict=True)
        ):
            out_shape[-1] *= shape[i]
            for st, s in zip(out_strides, strides, strict=True):
                st[-1] = s[i]
        else:
            out_shape.append(shape[i])
            for st, s in zip(out_strides, strides, strict=True):
                st.append(s[i])
    if not out_shape:
        return (1,), [(1,) for _ in strides]
    return tuple(out_shape), [tuple(st) for st in out_strides]


def split_axis(
    shape: Sequence[int], strides: Sequence[Sequence[int]], axis: int
) -> tuple[tuple[int, ...], list[tuple[int, ...]], int, list[int]]:
    """Split a tensor into rows along ``axis``.

    Returns (outer shape, per-tensor outer strides, row length, per-tensor axis strides), the
    outer dims coalesced. Rows are enumerated in row-major order of the outer dims.
    """
    n = shape[axis]
    outer = [d for i, d in enumerate(shape) if i != axis]
    outer_strides = [[s for i, s in enumerate(st) if i != axis] for st in strides]
    oshape, ostrides = coalesce(outer, outer_strides)
    return oshape, ostrides, n, [st[axis] for st in strides]
