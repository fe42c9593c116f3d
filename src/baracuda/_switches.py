"""Module-level switches, read cheaply on every call's path.

Some modules hold switches and tunables as plain globals (``scan._kernels``,
``softmax._rows``, ``_cuda.launch``), which tests and benchmarks reassign. A launch prepared
under some values must not be replayed under others, so each call used to read them all
again (about 50 globals: 1.0 us of an H200 host's time a call). A module registered with
``watch`` counts every assignment to its attributes instead, and ``memo`` reads the values
again only after one.

Assignments from outside the module (``module.NAME = value``, ``monkeypatch.setattr``) are
counted; a function of the module rebinding its own global (``global NAME``) and changes in
place of a switch's object (a dict) are not: switches are replaced, never changed in place,
and the modules do not rebind them.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TypeVar

__all__ = ["watch", "generation", "memo"]

_generation = [0]  # assignments to watched modules' attributes so far


class _Watched(types.ModuleType):
    """A module whose attribute assignments and deletions are counted."""

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, value)
        _generation[0] += 1

    def __delattr__(self, name: str) -> None:
        super().__delattr__(name)
        _generation[0] += 1


def watch(module_name: str) -> None:
    """Count assignments to the attributes of the (imported) module ``module_name``."""
    sys.modules[module_name].__class__ = _Watched


def generation() -> int:
    """How many assignments watched modules' attributes have had."""
    return _generation[0]


T = TypeVar("T")


def memo(read: Callable[[], T]) -> Callable[[], T]:
    """``read`` as a function that calls it again only after an assignment to a watched
    module's attribute (its value otherwise: the same object, so a caller may compare by
    identity first)."""
    box: list[tuple[int, T] | None] = [None]

    def values() -> T:
        g = _generation[0]
        got = box[0]
        if got is not None and got[0] == g:
            return got[1]
        value = read()
        box[0] = (g, value)  # one store: a thread never sees another's value with its count
        return value

    values.__doc__ = read.__doc__
    values.__name__ = read.__name__
    values.__qualname__ = read.__qualname__
    return values
