#!/usr/bin/python3
"""Writes tests/data/shape_chains/: small PyTorch blocks whose shape operands (Pad pads, Slice
ends, Reshape/Expand/Tile shapes, Resize sizes, Range limits, ConstantOfShape shapes, TopK K)
are computed from x.shape inside the graph, exported by the legacy (TorchScript) exporter at
several opsets, with an input and PyTorch's fp32 output. tests/onnx/test_shape_chains.cpp runs
them on lavapipe and checks that every node computed from shapes alone was folded at load.

  /usr/bin/python3 tools/models/make_shape_chains.py

Needs torch (Debian's python3-torch 1.13 is enough) and onnx; not part of setup or CI, the
models are checked in. For each model NAME_opsetN.onnx it writes NAME_opsetN.folded.txt: the
nodes whose outputs follow from shapes and constants alone (found here by walking the graph),
which the test requires to be absent from the device graph.
"""
import os

import numpy as np
import onnx
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                   "shape_chains")


def register_unflatten_like_torch2():
    """torch 1.13's legacy exporter has no aten::unflatten; PyTorch 2's has one, which
    normalises the axis with Add and Mod before slicing the input's shape (the chain that
    stopped ViT-B/16's legacy export at 'Slice ... ends must be known at load time'). This
    symbolic emits that same chain, written from the ops it produces."""
    from torch.onnx import symbolic_helper

    def unflatten(g, x, dim, sizes):
        rank = symbolic_helper._get_tensor_rank(x)
        rank_c = g.op("Constant", value_t=torch.tensor([rank], dtype=torch.int64))
        axis = g.op("Mod", g.op("Add", rank_c, dim), rank_c)
        shape = g.op("Shape", x)
        one = g.op("Constant", value_t=torch.tensor([1], dtype=torch.int64))
        head = g.op("Slice", shape, g.op("Constant", value_t=torch.tensor([0])),
                    g.op("Reshape", axis, one))
        tail = g.op("Slice", shape, g.op("Reshape", g.op("Add", axis, one), one),
                    g.op("Constant", value_t=torch.tensor([2**63 - 1])))
        return g.op("Reshape", x, g.op("Concat", head, sizes, tail, axis_i=0))

    torch.onnx.register_custom_op_symbolic("aten::unflatten", unflatten, 13)


class SwinWindowBlock(torch.nn.Module):
    """Swin's shifted-window attention and patch merging as torchvision writes them: H and W
    padded up to a multiple of the window (pads from x.shape and %), a cyclic roll, window
    partition through view/permute, q scaled by (C // heads) ** -0.5, a relative position bias
    gathered by a fixed index, the shift mask made by slice assignment into zeros (ScatterND),
    then the reverse, the unpad slice and the odd-size patch-merging pad."""

    def __init__(self, dim=16, heads=2, window=4, shift=2):
        super().__init__()
        self.heads, self.window, self.shift = heads, window, shift
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.reduction = torch.nn.Linear(4 * dim, 2 * dim, bias=False)
        self.bias_table = torch.nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.1)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window),
                                            indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("bias_index", (rel[..., 0] * (2 * window - 1) + rel[..., 1]).flatten())

    def forward(self, x):
        B, H, W, C = x.shape
        ws, heads = self.window, self.heads
        x = F.pad(x, (0, 0, 0, (ws - W % ws) % ws, 0, (ws - H % ws) % ws))
        _, pH, pW, _ = x.shape
        s = self.shift
        x = torch.roll(x, shifts=(-s, -s), dims=(1, 2))
        n_win = (pH // ws) * (pW // ws)
        x = x.view(B, pH // ws, ws, pW // ws, ws, C).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(B * n_win, ws * ws, C)
        qkv = self.qkv(x).reshape(x.size(0), x.size(1), 3, heads, C // heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attn = (q * (C // heads) ** -0.5).matmul(k.transpose(-2, -1))
        bias = self.bias_table[self.bias_index].view(ws * ws, ws * ws, heads).permute(2, 0, 1)
        attn = attn + bias.unsqueeze(0)
        mask = x.new_zeros((pH, pW))
        label = 0
        for h in ((0, -ws), (-ws, -s), (-s, None)):
            for w in ((0, -ws), (-ws, -s), (-s, None)):
                mask[h[0]:h[1], w[0]:w[1]] = label
                label += 1
        mask = mask.view(pH // ws, ws, pW // ws, ws).permute(0, 2, 1, 3).reshape(n_win, ws * ws)
        mask = mask.unsqueeze(1) - mask.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        attn = attn.view(x.size(0) // n_win, n_win, heads, x.size(1), x.size(1))
        attn = (attn + mask.unsqueeze(1).unsqueeze(0)).view(-1, heads, x.size(1), x.size(1))
        x = F.softmax(attn, dim=-1).matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), C)
        x = self.proj(x)
        x = x.view(B, pH // ws, pW // ws, ws, ws, C).permute(0, 1, 3, 2, 4, 5)
        x = torch.roll(x.reshape(B, pH, pW, C), shifts=(s, s), dims=(1, 2))
        x = x[:, :H, :W, :].contiguous()
        # Patch merging: pad odd H and W by one, then four strided slices side by side.
        h2, w2 = x.shape[-3:-1]
        x = F.pad(x, (0, 0, 0, w2 % 2, 0, h2 % 2))
        x = torch.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :],
                       x[..., 1::2, 1::2, :]], -1)
        return self.reduction(x)


class VitEncoderBlock(torch.nn.Module):
    """ViT's class token and self-attention as PyTorch 2's nn.MultiheadAttention runs it with
    the fast path off: the class token expanded to the batch read from x.shape, the packed
    in-projection split by unflatten (Add/Mod/Slice on the shape), q, k, v reshaped with the
    batch and length from x.shape, and the scale 1/sqrt(head_dim) computed from the shape as the
    exporter's scaled_dot_product_attention does."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.cls = torch.nn.Parameter(torch.randn(1, 1, dim))
        self.pos = torch.nn.Parameter(torch.randn(1, 9, dim) * 0.1)
        self.in_proj = torch.nn.Linear(dim, 3 * dim)
        self.out_proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        n = x.shape[0]
        x = torch.cat([self.cls.expand(n, -1, -1), x], dim=1) + self.pos
        x = x.transpose(0, 1)  # (L, N, E), as MultiheadAttention computes
        L, N, E = x.shape
        proj = self.in_proj(x).unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2)
        q, k, v = proj.squeeze(-2).contiguous()
        hd = E // self.heads
        q, k, v = (t.view(L, N * self.heads, hd).transpose(0, 1).view(N, self.heads, L, hd)
                   for t in (q, k, v))
        scale = 1.0 / torch.sqrt(torch._shape_as_tensor(q)[-1:].to(q.dtype))
        attn = torch.softmax(q.matmul(k.transpose(-2, -1)) * scale, dim=-1)
        y = attn.matmul(v).permute(2, 0, 1, 3).reshape(L * N, E)
        return self.out_proj(y).view(L, N, E).transpose(0, 1)


class ShapeConsumers(torch.nn.Module):
    """One of each remaining consumer, its operand computed from x.shape: Resize to twice the
    size, Range positions, ConstantOfShape zeros, Tile, Expand, a causal mask from
    triu(ones(L, L)) (Trilu), and TopK with K = min(5, L) written as torchvision's detection
    heads write it (a ReduceMin over a Concat)."""

    def forward(self, x):
        n, c, h, w = x.shape
        up = F.interpolate(x, size=(h * 2, w * 2), mode="nearest")
        seq = up.flatten(2)  # (n, c, L)
        L = seq.shape[-1]
        pos = torch.arange(L, dtype=torch.float32).to(x.dtype) / L
        causal = torch.triu(torch.ones(c, c, dtype=x.dtype), diagonal=1)
        mixed = seq + pos + torch.zeros(n, c, 1, dtype=x.dtype)
        mixed = torch.matmul(torch.softmax(causal * -1e4 + mixed[:, :, :c], -1), mixed)
        k = torch.min(torch.cat((torch.tensor([5]), torch._shape_as_tensor(mixed)[-1:]), 0))
        top, _ = mixed.topk(k, dim=-1)
        tiled = top.repeat(1, 1, x.shape[0] + 1)
        return tiled + x.mean(dim=(2, 3), keepdim=True).view(n, c, 1).expand_as(tiled)


MODELS = {
    # name: (module, input shape, opsets)
    "swin_window": (SwinWindowBlock, (1, 9, 9, 16), (11, 13, 17)),
    "vit_mha": (VitEncoderBlock, (2, 8, 32), (13, 14, 17)),
    "shape_consumers": (ShapeConsumers, (2, 3, 3, 4), (14, 17)),
}


def static_nodes(model):
    """Names of the nodes computable from constants and shapes alone: every input is an
    initializer or such a node's output, or the node reads only its input's shape."""
    known = {t.name for t in model.graph.initializer}
    names = []
    for node in model.graph.node:
        inputs = [i for i in node.input if i]
        if node.op_type in ("Shape", "Size") or all(i in known for i in inputs):
            known.update(node.output)
            if node.op_type != "Constant":
                names.append(node.name)
    return names


def main():
    os.makedirs(OUT, exist_ok=True)
    register_unflatten_like_torch2()
    for name, (cls, shape, opsets) in MODELS.items():
        torch.manual_seed(0)
        module = cls().eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            y = module(x)
        np.save(os.path.join(OUT, f"{name}_input.npy"), x.numpy())
        np.save(os.path.join(OUT, f"{name}_output.npy"), y.numpy())
        for opset in opsets:
            path = os.path.join(OUT, f"{name}_opset{opset}.onnx")
            torch.onnx.export(module, (x,), path, opset_version=opset, input_names=["x"],
                              output_names=["y"])
            model = onnx.load(path)
            folded = static_nodes(model)
            with open(path[:-len(".onnx")] + ".folded.txt", "w") as f:
                f.write("".join(n + "\n" for n in folded))
            print(f"{path}: {os.path.getsize(path)} bytes, {len(model.graph.node)} nodes, "
                  f"{len(folded)} computed from shapes")


if __name__ == "__main__":
    main()
