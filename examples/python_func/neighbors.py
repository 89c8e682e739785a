"""Count the pairs of points closer than a radius: a pure-Python double loop.

`make_step(**params)` (profopt.yml: `callable: neighbors:make_step`) makes the points once; each
step counts the close pairs and records the count, so a faster version must find the same pairs.
"""
from __future__ import annotations

import random

from profopt_ci import record


def make_points(n: int, dim: int, seed: int) -> list[tuple[float, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.random() for _ in range(dim)) for _ in range(n)]


def count_close_pairs(points: list[tuple[float, ...]], radius: float) -> int:
    r2 = radius * radius
    count = 0
    for i, p in enumerate(points):
        for q in points[i + 1:]:
            d2 = 0.0
            for a, b in zip(p, q):
                d2 += (a - b) * (a - b)
            if d2 < r2:
                count += 1
    return count


def make_step(n: int = 300, dim: int = 3, radius: float = 0.2, seed: int = 0):
    points = make_points(n, dim, seed)

    def step() -> None:
        record(close_pairs=count_close_pairs(points, radius))

    return step
