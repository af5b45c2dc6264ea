#!/usr/bin/python3
"""Exports a PyTorch LSTM and a GRU sequence model with the legacy (TorchScript) exporter and
writes, next to each model, an input and PyTorch's own outputs as .npy:

  MODEL.onnx  MODEL_input.npy  MODEL_output.npy      (MODEL: lstm_seq, gru_seq)

Needs torch (Debian's python3-torch 1.13 is enough). Small models (the default) are checked in
under tests/models/ and run by tests/onnx/test_onnx_recurrent.cpp; --large writes bigger ones
(hidden 512, 100 steps, batch 8) for timing on a real GPU. --check runs each written model
through the vkgraph Python package and prints the largest difference from PyTorch.

  /usr/bin/python3 tools/models/make_recurrent.py                      # -> tests/models
  /usr/bin/python3 tools/models/make_recurrent.py --large --out /tmp/rnn --check
"""
import argparse
import inspect
import os

import numpy as np
import torch


class LstmSeq(torch.nn.Module):
    """A two-layer bidirectional LSTM over batch-first sequences with a linear head per step."""

    def __init__(self, features, hidden):
        super().__init__()
        self.lstm = torch.nn.LSTM(features, hidden, num_layers=2, batch_first=True,
                                  bidirectional=True)
        self.head = torch.nn.Linear(2 * hidden, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


class GruSeq(torch.nn.Module):
    """A one-layer GRU (PyTorch's GRU is ONNX's linear_before_reset=1) whose last hidden state
    feeds a classifier."""

    def __init__(self, features, hidden):
        super().__init__()
        self.gru = torch.nn.GRU(features, hidden, batch_first=True)
        self.head = torch.nn.Linear(hidden, 3)

    def forward(self, x):
        _, h = self.gru(x)
        return self.head(h[-1])


def export(model, name, x, out):
    path = os.path.join(out, name + ".onnx")
    # The legacy (TorchScript) exporter: PyTorch 2.x defaults to the dynamo one.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model.eval(), (x,), path, opset_version=14, input_names=["x"],
                      output_names=["y"], **legacy)
    with torch.no_grad():
        y = model(x).numpy()
    np.save(os.path.join(out, name + "_input.npy"), x.numpy())
    np.save(os.path.join(out, name + "_output.npy"), y)
    return path, y


def main():
    default_out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                               "models")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--large", action="store_true", help="hidden 512, 100 steps, batch 8")
    ap.add_argument("--check", action="store_true", help="compare vkgraph against PyTorch")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    if args.large:
        batch, steps, features, hidden = 8, 100, 64, 512
    else:
        batch, steps, features, hidden = 2, 7, 8, 16
    x = torch.randn(batch, steps, features)
    written = [export(LstmSeq(features, hidden), "lstm_seq", x, args.out),
               export(GruSeq(features, hidden), "gru_seq", x, args.out)]
    for path, y in written:
        print(f"{path}: output {list(y.shape)}")
    if args.check:
        import vkgraph
        for path, y in written:
            got = vkgraph.InferenceSession(path).run(None, {"x": x.numpy()})[0]
            print(f"{os.path.basename(path)}: max |vkgraph - torch| = {np.abs(got - y).max():.3g}")


if __name__ == "__main__":
    main()
