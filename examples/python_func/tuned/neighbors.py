"""Count the pairs of points closer than a radius: all pairwise distances at once with numpy.

`make_step(**params)` (profopt.yml: `callable: neighbors:make_step`) makes the points once; each
step counts the close pairs and records the count, so a faster version must find the same pairs.
"""
from __future__ import annotations

import random

import numpy as np

from profopt_ci import record


def make_points(n: int, dim: int, seed: int) -> list[tuple[float, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.random() for _ in range(dim)) for _ in range(n)]


def count_close_pairs(points: list[tuple[float, ...]], radius: float) -> int:
    p = np.asarray(points)
    d2 = ((p[:, None, :] - p[None, :, :]) ** 2).sum(axis=-1)
    return int(np.triu(d2 < radius * radius, k=1).sum())


def make_step(n: int = 300, dim: int = 3, radius: float = 0.2, seed: int = 0):
    points = make_points(n, dim, seed)

    def step() -> None:
        record(close_pairs=count_close_pairs(points, radius))

    return step
