#!/usr/bin/python3
"""Writes tests/models/attention_*.onnx: small attention blocks exported by PyTorch's legacy
(TorchScript) exporter, which tests/onnx/test_onnx_attention.cpp loads. Needs torch (Debian's
python3-torch, 1.13, is enough); not part of setup or CI, the models are checked in.

  /usr/bin/python3 tools/export_attention_tests.py
"""
import math
import os

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "models")


class Mha(torch.nn.Module):
    """torch.nn.MultiheadAttention, one head of 64: q is scaled by a Div before its MatMul."""

    def __init__(self):
        super().__init__()
        self.m = torch.nn.MultiheadAttention(64, 1, batch_first=True)

    def forward(self, x):
        return self.m(x, x, x, need_weights=False)[0]


class Bert(torch.nn.Module):
    """Hugging Face BERT's self-attention, one head of 64, with the additive mask made before
    the layer (as BertModel does)."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(64, 64) for _ in range(3))

    def heads(self, x):
        return x.view(x.shape[0], x.shape[1], 1, 64).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        extended = (1.0 - mask[:, None, None, :]) * torch.finfo(torch.float32).min
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(64) + extended
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(x.shape[0], x.shape[1], 64)


torch.manual_seed(0)
x = torch.randn(2, 7, 64)
mask = torch.ones(2, 7)
mask[1, -2:] = 0
torch.onnx.export(Mha().eval(), (x,), os.path.join(OUT, "attention_mha_legacy.onnx"),
                  opset_version=14, input_names=["x"], output_names=["y"])
torch.onnx.export(Bert().eval(), (x, mask), os.path.join(OUT, "attention_bert_legacy.onnx"),
                  opset_version=14, input_names=["x", "mask"], output_names=["y"])
