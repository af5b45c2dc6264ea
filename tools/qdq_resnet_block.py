#!/usr/bin/python3
"""Writes a small QDQ ResNet-like model in the layout onnxruntime's quantize_static writes.

For looking at what the planner makes of a QDQ ResNet without onnxruntime (not installed
here): `vkgraph bench OUT.onnx --top 40` lists the nodes and their kernels. Layout, as
quantize_static writes it for torchvision's ResNet (QDQ format, per-channel QInt8 weights,
QUInt8 activations): every Conv reads DequantizeLinear(x_q), DequantizeLinear(w_q int8, axis
0) and DequantizeLinear(b int32, scale x_scale * w_scale) and writes QuantizeLinear (the Relu
after a Conv is dropped: its output's zero point 0 clamps it); a block ends in
Add(DQ(conv3_q), DQ(identity_q)) [-> Relu] -> QuantizeLinear. A downsampling block's
downsample Conv comes after conv3, as torch.onnx exports it. The stem's MaxPool and the
head's Flatten sit between a DequantizeLinear and a QuantizeLinear of the same scale and zero
point (quantize_static's layout for ops that only move values); GlobalAveragePool between a
DequantizeLinear and a QuantizeLinear of its own. Random weights and scales.

Usage: qdq_resnet_block.py OUT.onnx [--size 32] [--channels 32] [--seed 0] [--no-maxpool]
                           [--float-flatten]
  --no-maxpool     no stem MaxPool (the model of branch int8-4)
  --float-flatten  DQ -> Flatten -> Gemm, the Flatten's output not quantized (int8-4's form)
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_graph_builder import GraphBuilder


class Builder(GraphBuilder):
    def __init__(self, rng):
        super().__init__()
        self.rng = rng

    def node(self, op, inputs, attrs=None, base=None):
        out = self.name(base or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **(attrs or {})))
        return out

    def q(self, x, scale, zero):
        """QuantizeLinear to uint8 with constant params; returns (q, scale name, zero name)."""
        s = self.const("s", np.array(scale, np.float32))
        z = self.const("z", np.array(zero, np.uint8))
        return self.node("QuantizeLinear", [x, s, z]), s, z

    def dq(self, q):
        v, s, z = q
        return self.node("DequantizeLinear", [v, s, z])

    def conv(self, xq, cin, cout, k, stride, out_scale):
        """DQ(x) * DQ(w) + DQ(b) -> Conv -> Q (uint8, zero point 0: the Relu folded in)."""
        w = self.rng.integers(-127, 128, size=(cout, cin, k, k), dtype=np.int8)
        ws = self.rng.uniform(0.002, 0.01, size=cout).astype(np.float32)
        wn = self.const("w", w)
        wsn = self.const("ws", ws)
        wzn = self.const("wz", np.zeros(cout, np.int8))
        wd = self.node("DequantizeLinear", [wn, wsn, wzn], {"axis": 0})
        xs = float(numpy_helper.to_array(next(i for i in self.inits if i.name == xq[1])))
        b = self.rng.integers(-2000, 2000, size=cout, dtype=np.int32)
        bn = self.const("b", b)
        bsn = self.const("bs", (np.float32(xs) * ws).astype(np.float32))
        bzn = self.const("bz", np.zeros(cout, np.int32))
        bd = self.node("DequantizeLinear", [bn, bsn, bzn], {"axis": 0})
        c = self.node("Conv", [self.dq(xq), wd, bd],
                      {"kernel_shape": [k, k], "strides": [stride, stride],
                       "pads": [k // 2] * 4})
        return self.q(c, out_scale, 0)

    def block(self, xq, cin, mid, cout, stride, relu_node):
        a = self.conv(xq, cin, mid, 1, 1, 0.05)
        b = self.conv(a, mid, mid, 3, stride, 0.05)
        c = self.conv(b, mid, cout, 1, 1, 0.08)
        identity = xq
        if stride != 1 or cin != cout:
            identity = self.conv(xq, cin, cout, 1, stride, 0.08)
        s = self.node("Add", [self.dq(c), self.dq(identity)])
        if relu_node:
            s = self.node("Relu", [s])
        return self.q(s, 0.1, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-maxpool", action="store_true")
    ap.add_argument("--float-flatten", action="store_true")
    args = ap.parse_args()
    b = Builder(np.random.default_rng(args.seed))
    c, hw = args.channels, args.size
    x = "input"
    xq = b.q(x, 0.02, 128)
    stem = b.conv(xq, 3, c, 3, 1, 0.05)
    if not args.no_maxpool:
        _, s, z = stem
        pooled = b.node("MaxPool", [b.dq(stem)],
                        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
        stem = (b.node("QuantizeLinear", [pooled, s, z]), s, z)
    h = b.block(stem, c, c // 2, 2 * c, 1, relu_node=True)     # downsample conv (channels)
    h = b.block(h, 2 * c, c // 2, 2 * c, 1, relu_node=False)   # identity residual
    h = b.block(h, 2 * c, c, 4 * c, 2, relu_node=True)         # downsample conv (stride 2)
    pooled = b.node("GlobalAveragePool", [b.dq(h)])
    pq = b.q(pooled, 0.05, 0)
    flat = b.node("Flatten", [b.dq(pq)])
    if not args.float_flatten:
        _, s, z = pq
        flat = b.dq((b.node("QuantizeLinear", [flat, s, z]), s, z))
    w = b.rng.integers(-127, 128, size=(10, 4 * c), dtype=np.int8)
    wd = b.node("DequantizeLinear", [b.const("fw", w), b.const("fws", np.float32(0.004)),
                                     b.const("fwz", np.int8(0))])
    g = b.node("Gemm", [flat, wd], {"transB": 1})
    logits = b.dq(b.q(g, 0.1, 128))
    model = b.model(
        "qdq_resnet_block",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, hw, hw])],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, [1, 10])], opset=13)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
