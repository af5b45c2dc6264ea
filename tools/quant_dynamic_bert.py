#!/usr/bin/env python3
"""A small BERT-shaped encoder in the layout onnxruntime's quantize_dynamic writes (issue 14),
for testing and timing vkgraph's dynamic-quantization path without onnxruntime.

usage: quant_dynamic_bert.py OUT.onnx [--float FLOAT.onnx] [--layers N] [--seq S] [--hidden D]
                             [--heads H] [--ffn F] [--seed S] [--per-channel]

Per encoder layer (post-LayerNorm, as BERT): Q, K, V projections reading one
DynamicQuantizeLinear, attention (float MatMuls, quantize_dynamic's MatMulConstBOnly default),
the output projection, residual Add and LayerNormalization, the feed-forward block with the
exporter's erf GELU (Div, Erf, Add, Mul, Mul), residual, LayerNormalization. Every linear layer
is quantize_dynamic's form of MatMul(x, W) + Add(bias):
  DynamicQuantizeLinear(x) -> x_q, x_scale, x_zero   (shared by the layers reading x)
  MatMulInteger(x_q, W_q int8, x_zero, W_zero int8 0) -> Cast(to FLOAT)
  Mul(x_scale, W_scale) -> Mul(cast, product) -> Add(bias, .)
with the weights quantized symmetrically (QInt8, zero point 0; --per-channel: a scale per
column). --float writes the same model with the float weights W_q * W_scale as MatMuls.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_graph_builder import GraphBuilder


class Builder(GraphBuilder):
    def __init__(self, quantized, rng, per_channel):
        super().__init__()
        self.quantized, self.rng, self.per_channel = quantized, rng, per_channel
        self.dql = {}  # activation name -> (x_q, x_scale, x_zero)

    def node(self, op, inputs, outputs=None, **attrs):
        outputs = outputs or [self.name(op.lower())]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.name(op), **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def linear(self, x, k, n):
        w = self.rng.standard_normal((k, n)).astype(np.float32) * (1.0 / np.sqrt(k))
        bias = self.rng.standard_normal(n).astype(np.float32) * 0.1
        # quantize_dynamic's QInt8 weights: symmetric, scale = max|w| / 127 (per column with
        # per_channel), zero point 0.
        amax = np.abs(w).max(axis=0) if self.per_channel else np.abs(w).max()
        scale = (amax / 127.0).astype(np.float32)
        wq = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        b = self.const("bias", bias)
        if not self.quantized:
            wf = (wq.astype(np.float32) * scale).astype(np.float32)
            mm = self.node("MatMul", [x, self.const("W", wf)])
            return self.node("Add", [b, mm])
        if x not in self.dql:
            outs = [self.name("x_q"), self.name("x_scale"), self.name("x_zero")]
            self.node("DynamicQuantizeLinear", [x], outs)
            self.dql[x] = outs
        xq, xs, xz = self.dql[x]
        wq_name = self.const("W_quantized", wq)
        wz = self.const("W_zero_point", np.zeros(n if self.per_channel else (), np.int8))
        ws = self.const("W_scale", np.asarray(scale, np.float32))
        acc = self.node("MatMulInteger", [xq, wq_name, xz, wz])
        cast = self.node("Cast", [acc], to=TensorProto.FLOAT)
        product = self.node("Mul", [xs, ws])
        mm = self.node("Mul", [cast, product])
        return self.node("Add", [b, mm])

    def layer_norm(self, x, d):
        g = self.const("ln_g", (1 + 0.1 * self.rng.standard_normal(d)).astype(np.float32))
        b = self.const("ln_b", (0.1 * self.rng.standard_normal(d)).astype(np.float32))
        return self.node("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-12)

    def gelu(self, x):
        t = self.node("Div", [x, self.const("sqrt2", np.array(np.sqrt(2.0), np.float32))])
        t = self.node("Erf", [t])
        t = self.node("Add", [t, self.const("one", np.array(1.0, np.float32))])
        t = self.node("Mul", [x, t])
        return self.node("Mul", [t, self.const("half", np.array(0.5, np.float32))])

    def encoder(self, x, mask, seq, d, heads, ffn):
        dh = d // heads
        heads_shape = self.const("shape", np.array([1, seq, heads, dh], np.int64))
        q = self.node("Transpose", [self.node("Reshape", [self.linear(x, d, d), heads_shape])],
                      perm=[0, 2, 1, 3])
        k = self.node("Transpose", [self.node("Reshape", [self.linear(x, d, d), heads_shape])],
                      perm=[0, 2, 3, 1])
        v = self.node("Transpose", [self.node("Reshape", [self.linear(x, d, d), heads_shape])],
                      perm=[0, 2, 1, 3])
        s = self.node("MatMul", [q, k])
        s = self.node("Div", [s, self.const("sqrt_dh", np.array(np.sqrt(dh), np.float32))])
        s = self.node("Add", [s, mask])
        a = self.node("MatMul", [self.node("Softmax", [s], axis=-1), v])
        a = self.node("Transpose", [a], perm=[0, 2, 1, 3])
        a = self.node("Reshape", [a, self.const("shape", np.array([1, seq, d], np.int64))])
        h = self.layer_norm(self.node("Add", [self.linear(a, d, d), x]), d)
        f = self.linear(self.gelu(self.linear(h, d, ffn)), ffn, d)
        return self.layer_norm(self.node("Add", [f, h]), d)


def build(quantized, args):
    b = Builder(quantized, np.random.default_rng(args.seed), args.per_channel)
    mask = np.zeros((1, 1, 1, args.seq), np.float32)
    mask[..., args.seq * 3 // 4:] = -10000.0  # padding at the end, as BERT's extended mask
    m = b.const("mask", mask)
    x = "x"
    for _ in range(args.layers):
        x = b.encoder(x, m, args.seq, args.hidden, args.heads, args.ffn)
    b.node("Identity", [x], ["y"])
    return b.model(
        "quant_dynamic_bert",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, args.seq, args.hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, args.seq, args.hidden])],
        opset=17, ir_version=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--float", dest="float_out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-channel", action="store_true")
    args = ap.parse_args()
    onnx.save(build(True, args), args.out)
    if args.float_out:
        onnx.save(build(False, args), args.float_out)


if __name__ == "__main__":
    main()
