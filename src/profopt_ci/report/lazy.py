"""Containers that build the report's view on demand, so a report prints what it needs and no more.

In: a mapping of names to zero-argument builders (`LazyMap`), or a list of comparison entries and
the function that turns one into its view (`Lazy`, `Filtered`). Out: read-only containers that
templates use like the dicts and lists the view used to be (`v.noise`, `v.benchmarks|length`,
`v.benchmarks[0]`, `{% for b in v.unchanged %}`), computing an entry the first time it is read.

Why: at 10⁵ benchmarks a fully built view is gigabytes, while the PR comment shows a few hundred
benchmarks and the HTML page caps its full sections. `LazyMap` keeps what it built; `Lazy` and
`Filtered` keep nothing (an item is built again if read again), so memory stays bounded however
many benchmarks there are.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any


class LazyMap(Mapping):
    """A read-only dict whose values are built on first read and then kept."""

    def __init__(self, builders: dict[str, Callable[[], Any]]) -> None:
        self._builders = builders
        self._values: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._values:
            self._values[key] = self._builders[key]()
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)


class Lazy(Sequence):
    """`[make(x) for x in items]`, each item built when it is read and not kept.

    `watch`, when set, is called with an item's index just before it is built while iterating, and
    with `len(self)` when the iteration ends: report/markdown.py learns there where a benchmark's
    section begins in the text a template is streaming.
    """

    def __init__(self, items: Sequence, make: Callable[[Any], Any]) -> None:
        self.items = items
        self.make = make
        self.watch: Callable[[int], None] | None = None

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self.make(x) for x in self.items[index]]
        return self.make(self.items[index])

    def __iter__(self) -> Iterator[Any]:
        watch = self.watch
        for i, x in enumerate(self.items):
            if watch is not None:
                watch(i)
            yield self.make(x)
        if watch is not None:
            watch(len(self.items))


class Filtered(Sequence):
    """`[y for y in (make(x) for x in items) if keep(y)]`, built on each read and not kept.

    `maybe(x)`, when given, is a cheap test that is false wherever `keep(make(x))` is: truthiness
    then skips building entries that cannot be kept (at 10⁵ benchmarks without profiles, "are
    there any phases?" costs a look at each, not a full build of each).
    """

    def __init__(self, items: Sequence, make: Callable[[Any], Any], keep: Callable[[Any], bool],
                 maybe: Callable[[Any], bool] | None = None) -> None:
        self.items, self.make, self.keep, self.maybe = items, make, keep, maybe

    def __iter__(self) -> Iterator[Any]:
        for x in self.items:
            if self.maybe is None or self.maybe(x):
                y = self.make(x)
                if self.keep(y):
                    yield y

    def __bool__(self) -> bool:
        return next(iter(self), None) is not None

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice) or index < 0:
            return list(self)[index]
        try:
            return next(itertools.islice(self, index, None))
        except StopIteration:
            raise IndexError(index) from None
