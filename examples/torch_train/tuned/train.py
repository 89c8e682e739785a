"""A small MLP classifier trained with AdamW on synthetic data: one optimizer step per benchmark step.

`make_step(**params)` is the factory profopt calls (profopt.yml: `callable: train:make_step`); it
builds everything once and returns the zero-argument training step that is timed.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from profopt_ci import phase, record

LOSS_WINDOW = 20  # steps: the recorded loss is the mean over the first steps from the fixed seed


def make_data(n: int, features: int, classes: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    teacher = torch.randn(features, classes, generator=g)
    y = (x @ teacher + 0.5 * torch.randn(n, classes, generator=g)).argmax(dim=1)
    return x, y


def make_model(features: int, hidden: int, layers: int, classes: int) -> nn.Module:
    blocks: list[nn.Module] = []
    width = features
    for _ in range(layers):
        blocks += [nn.Linear(width, hidden), nn.LayerNorm(hidden), nn.GELU()]
        width = hidden
    blocks.append(nn.Linear(width, classes))
    return nn.Sequential(*blocks)


def make_step(batch_size: int = 64, hidden: int = 128, layers: int = 4, features: int = 32,
              classes: int = 10, samples: int = 4096, seed: int = 0):
    torch.manual_seed(seed)
    x, y = make_data(samples, features, classes, seed)
    n = samples // batch_size * batch_size
    # The data is in memory, so it is stored already batched: the DataLoader hands out one whole
    # batch per step (in a new random order every epoch) instead of collating samples one by one.
    data = TensorDataset(x[:n].view(-1, batch_size, features), y[:n].view(-1, batch_size))
    loader = DataLoader(data, batch_size=None, shuffle=True, generator=torch.Generator().manual_seed(seed))
    model = make_model(features, hidden, layers, classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    batches = iter(loader)
    losses: list[float] = []

    def next_batch():
        nonlocal batches
        try:
            return next(batches)
        except StopIteration:  # a new epoch
            batches = iter(loader)
            return next(batches)

    def step() -> None:
        with phase("data_loading"):
            x, y = next_batch()
        with phase("forward"):
            loss = nn.functional.cross_entropy(model(x), y)
        with phase("backward"):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        with phase("optimizer"):
            optimizer.step()
        if len(losses) < LOSS_WINDOW:
            losses.append(loss.item())
        record(loss=sum(losses) / len(losses))

    return step
