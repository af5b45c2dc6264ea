#!/usr/bin/env python3
"""A gpt2-small-shaped decoder (12 layers, d 768, 12 heads, vocab 50257, seq 128, random
weights) exported with the legacy TorchScript exporter, for timing model load and the 25.7 MB
logits readback without Hugging Face: `gpt_like.py OUT_DIR [LAYERS]` writes
OUT_DIR/gpt_like_LAYERS.onnx and OUT_DIR/gpt_like_ids.npy."""
import math
import os
import sys

import numpy as np
import torch

D, H, V, T = 768, 12, 50257, 128


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.fc, self.out = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)

    def forward(self, x, mask):
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        heads = lambda t: t.view(1, T, H, D // H).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(D // H) + mask
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(1, T, D)
        x = x + self.proj(y)
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class GptLike(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(V, D), torch.nn.Embedding(T, D)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(layers)])
        self.lnf = torch.nn.LayerNorm(D)
        self.register_buffer("mask", torch.triu(torch.full((T, T), -1e9), 1))

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x, self.mask)
        return self.lnf(x) @ self.wte.weight.t()  # tied embedding, as gpt2's lm_head


def main():
    out = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = GptLike(layers).eval()
    ids = torch.randint(0, V, (1, T))
    torch.onnx.export(model, (ids,), os.path.join(out, f"gpt_like_{layers}.onnx"),
                      input_names=["ids"], output_names=["logits"], opset_version=14)
    np.save(os.path.join(out, "gpt_like_ids.npy"), ids.numpy())


if __name__ == "__main__":
    main()
