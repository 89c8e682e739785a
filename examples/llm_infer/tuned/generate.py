"""Greedy generation with a tiny decoder-only transformer and a KV cache.

`make_step(**params)` (profopt.yml: `callable: generate:make_step`) builds a randomly initialized
model and a fixed prompt once; each step generates `new_tokens` tokens for the whole batch:
one prefill over the prompt, then one decode step per token. The greedy output ids are hashed and
recorded, so a change that alters the output fails the `output_digest` constraint.
"""
from __future__ import annotations

import hashlib

import torch
from torch import nn
from torch.nn import functional as F

from profopt_ci import phase, record


class KVCache:
    """Keys and values per layer in buffers allocated once for the whole generation."""

    def __init__(self, layers: int, batch: int, heads: int, head_dim: int, max_len: int) -> None:
        shape = (layers, batch, heads, max_len, head_dim)
        self.k, self.v = torch.empty(shape), torch.empty(shape)
        self.length = [0] * layers

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.length[layer], self.length[layer] + k.shape[2]
        self.k[layer, :, :, start:end] = k
        self.v[layer, :, :, start:end] = v
        self.length[layer] = end
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, cache: KVCache, layer: int) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        with phase("kv_cache"):
            k, v = cache.update(layer, k, v)
        # A causal mask only matters inside the prompt; a decode query may see every cached key.
        y = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int, max_len: int) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids: torch.Tensor, cache: KVCache, start: int) -> torch.Tensor:
        positions = torch.arange(start, start + ids.shape[1])
        x = self.tok(ids) + self.pos(positions)
        for i, block in enumerate(self.blocks):
            x = block(x, cache, i)
        return self.head(self.ln(x[:, -1]))


@torch.inference_mode()
def generate(model: TinyLM, prompt: torch.Tensor, new_tokens: int, cfg: dict) -> torch.Tensor:
    cache = KVCache(cfg["layers"], prompt.shape[0], cfg["heads"], cfg["d"] // cfg["heads"],
                    prompt.shape[1] + new_tokens)
    with phase("prefill"):
        logits = model(prompt, cache, 0)
    out = []
    for i in range(new_tokens):
        with phase("sampling"):
            token = logits.argmax(dim=-1, keepdim=True)
        out.append(token)
        if i + 1 < new_tokens:
            with phase("decode"):
                logits = model(token, cache, prompt.shape[1] + i)
    return torch.cat(out, dim=1)


def make_step(batch: int = 4, prompt_len: int = 64, new_tokens: int = 64, d: int = 128, heads: int = 4,
              layers: int = 4, vocab: int = 256, seed: int = 0):
    torch.manual_seed(seed)
    cfg = {"d": d, "heads": heads, "layers": layers}
    model = TinyLM(vocab, d, heads, layers, prompt_len + new_tokens).eval()
    prompt = torch.randint(0, vocab, (batch, prompt_len), generator=torch.Generator().manual_seed(seed))

    def step() -> None:
        ids = generate(model, prompt, new_tokens, cfg)
        record(output_digest=hashlib.sha256(ids.numpy().tobytes()).hexdigest()[:16])

    return step
