#!/usr/bin/python3
"""Train the small digits CNN bundled with vkgraph and export it to ONNX.

Data: sklearn.datasets.load_digits() (1797 greyscale 8x8 images, values
0..16, shipped inside scikit-learn, no download). Pixels are scaled to 0..1.

Outputs (written next to this script):
  digits.onnx                  opset 13, input "input" [batch,1,8,8] float32,
                               output "logits" [batch,10] float32
  digits_holdout_input.npy     float32 [100,1,8,8]  held-out images
  digits_holdout_labels.npy    int64   [100]        their labels
  digits_holdout_logits.npy    float32 [100,10]     PyTorch logits for them

The 100 held-out samples are split off first (stratified) and are never used
for training or for choosing the checkpoint; a separate validation split of
the remaining data picks the best epoch.

Usage:  python3 models/train_digits.py
Needs Debian 12 packages python3-torch python3-sklearn python3-onnx
python3-numpy (PyTorch 1.13). If the `python3` on PATH lacks torch (e.g. a
pyenv shim), the script re-runs itself under /usr/bin/python3.
"""

import os
import sys

try:
    import torch
except ImportError:  # pragma: no cover - environment fallback
    _sys_py = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(_sys_py) and os.path.exists(_sys_py):
        print(f"[train_digits] torch not importable from {sys.executable}; re-running with {_sys_py}",
              file=sys.stderr)
        os.execv(_sys_py, [_sys_py] + sys.argv)
    raise

import hashlib
import random
import time

import numpy as np
import onnx
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 1234
HOLDOUT = 100
VAL = 200
EPOCHS = 40
BATCH = 64
LR = 2e-3

OUT_DIR = os.path.dirname(os.path.abspath(__file__))


def set_determinism(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    # A fixed thread count keeps CPU reductions in the same order run to run.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def sha(arr):
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()[:16]


def main():
    set_determinism(SEED)
    t0 = time.time()

    digits = load_digits()
    x_all = (digits.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y_all = digits.target.astype(np.int64)

    # 1) held-out test set, split off first and never touched during training.
    x_rest, x_hold, y_rest, y_hold = train_test_split(
        x_all, y_all, test_size=HOLDOUT, stratify=y_all, random_state=SEED)
    # 2) validation set (for picking the best epoch) from the remainder.
    x_tr, x_val, y_tr, y_val = train_test_split(
        x_rest, y_rest, test_size=VAL, stratify=y_rest, random_state=SEED + 1)
    print(f"samples: total={len(x_all)} train={len(x_tr)} val={len(x_val)} holdout={len(x_hold)}")

    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    xv, yv = torch.from_numpy(x_val), torch.from_numpy(y_val)
    xh, yh = torch.from_numpy(x_hold), torch.from_numpy(y_hold)

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED)

    best_val, best_epoch, best_state = -1.0, -1, None
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(xt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        val_acc = accuracy(model, xv, yv)
        if val_acc > best_val:
            best_val, best_epoch = val_acc, epoch
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        if epoch % 5 == 4 or epoch == EPOCHS - 1:
            print(f"epoch {epoch + 1:3d}  loss {total / len(xt):.4f}  val_acc {val_acc:.4f}")

    model.load_state_dict(best_state)
    model.eval()
    print(f"best epoch {best_epoch + 1} val_acc {best_val:.4f}; training took {time.time() - t0:.1f}s")

    with torch.no_grad():
        hold_logits = model(xh).numpy().astype(np.float32)
    hold_acc = float((hold_logits.argmax(1) == y_hold).mean())
    print(f"held-out accuracy (PyTorch, {HOLDOUT} samples): {hold_acc:.4f} "
          f"({int(round(hold_acc * HOLDOUT))}/{HOLDOUT})")

    onnx_path = os.path.join(OUT_DIR, "digits.onnx")
    torch.onnx.export(
        model,
        torch.from_numpy(x_hold[:1]),
        onnx_path,
        input_names=["input"],
        output_names=["logits"],
        opset_version=13,
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        training=torch.onnx.TrainingMode.EVAL,
    )

    np.save(os.path.join(OUT_DIR, "digits_holdout_input.npy"), np.ascontiguousarray(x_hold, dtype=np.float32))
    np.save(os.path.join(OUT_DIR, "digits_holdout_labels.npy"), np.ascontiguousarray(y_hold, dtype=np.int64))
    np.save(os.path.join(OUT_DIR, "digits_holdout_logits.npy"), np.ascontiguousarray(hold_logits, dtype=np.float32))

    m = onnx.load(onnx_path)
    onnx.checker.check_model(m)
    ops = sorted({n.op_type for n in m.graph.node})
    opset = [(o.domain or "ai.onnx", o.version) for o in m.opset_import]
    print(f"onnx: {onnx_path} ({os.path.getsize(onnx_path)} bytes), opset {opset}")
    print(f"onnx nodes ({len(m.graph.node)}): " + ", ".join(n.op_type for n in m.graph.node))
    print(f"onnx op types: {', '.join(ops)}")
    for vi in list(m.graph.input) + list(m.graph.output):
        dims = [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]
        print(f"  io {vi.name}: elem_type={vi.type.tensor_type.elem_type} shape={dims}")

    with open(onnx_path, "rb") as f:
        onnx_sha = hashlib.sha256(f.read()).hexdigest()[:16]
    print(f"sha256[:16] digits.onnx={onnx_sha} holdout_logits={sha(hold_logits)} "
          f"holdout_input={sha(x_hold)}")


if __name__ == "__main__":
    main()
