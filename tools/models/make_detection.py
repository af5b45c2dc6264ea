#!/usr/bin/python3
"""Exports a small torchvision SSDLite detector (MobileNetV3-Large backbone, SSDLite head,
torchvision's own post-processing: box decoding, clipping, score threshold, per-class TopK,
batched NMS, the cut to detections_per_img and the rescale to the input size) with the legacy (TorchScript)
exporter, and writes an input image and PyTorch's outputs beside it:

  ssdlite_small.onnx  ssdlite_small_input.npy  ssdlite_small_{boxes,scores,labels}.npy

It is ssdlite320_mobilenet_v3_large built from the same torchvision pieces, made small enough
to check in and to run on lavapipe: backbone and extra layers at width 0.25 (reduced tail, as
torchvision builds it without a pretrained backbone), 4 classes, 128x128 instead of 320x320.
Weights are random (seeded), with BatchNorm statistics estimated on a random batch
(models/export_zoo.realistic_norms), so activations neither vanish nor explode.

Detections are only comparable across implementations when no two scores that decide the
order, the NMS sweep or a TopK cut are nearly equal, and no IoU of two candidates is nearly
the NMS threshold; the script prints both margins and refuses a seed where one is below
--min-gap (seed 0 is).

Needs torch and torchvision (Debian's python3-torch 1.13 and python3-torchvision 0.14 are
enough); not part of setup or CI, the files are checked in under tests/models/ and run by
tests/onnx/test_onnx_detection.cpp. --check runs the model through the vkgraph Python package.

  /usr/bin/python3 tools/models/make_detection.py                 # -> tests/models
"""
import argparse
import inspect
import os
import sys
from functools import partial

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))
import export_zoo  # noqa: E402  models/export_zoo.py: realistic_norms

NAME = "ssdlite_small"
OUTPUTS = ["boxes", "scores", "labels"]


def build(size, classes, width, detections, topk):
    from torchvision.models import mobilenetv3
    from torchvision.models.detection import _utils as det_utils
    from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
    from torchvision.models.detection.ssd import SSD
    from torchvision.models.detection.ssdlite import (SSDLiteFeatureExtractorMobileNet,
                                                      SSDLiteHead, _normal_init)

    # As ssdlite320_mobilenet_v3_large builds it (BN eps and momentum, reduced tail, normal
    # init, C4 at the last strided stage), with a width multiplier it does not expose.
    norm_layer = partial(torch.nn.BatchNorm2d, eps=0.001, momentum=0.03)
    setting, last_channel = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large",
                                                           width_mult=width, reduced_tail=True)
    backbone = mobilenetv3.MobileNetV3(setting, last_channel, norm_layer=norm_layer).features
    _normal_init(backbone)
    stages = [0] + [i for i, b in enumerate(backbone) if getattr(b, "_is_cn", False)]
    backbone = SSDLiteFeatureExtractorMobileNet(backbone, stages[-1], norm_layer,
                                                width_mult=width)
    anchors = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    channels = det_utils.retrieve_out_channels(backbone, (size, size))
    head = SSDLiteHead(channels, anchors.num_anchors_per_location(), classes, norm_layer)
    return SSD(backbone, anchors, (size, size), classes, head=head, score_thresh=0.001,
               nms_thresh=0.55, detections_per_img=detections, topk_candidates=topk,
               image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])


def calibrate(model, batch):
    # SSD in training mode wants targets; its BN layers live in the backbone and the head.
    model.head(list(model.backbone(batch).values()))


def decision_margins(model, image):
    """How far this input is from a tie that would make the detections implementation-defined:
    the smallest relative gap between two scores whose order decides the output (each class's
    TopK cut, the order of two boxes of a class that overlap enough to suppress one another,
    the order and the cut of the final detections), and the smallest distance of an IoU of two
    candidate boxes of a class from the NMS threshold."""
    from torchvision.ops import box_iou, boxes as box_ops

    def rel(a, b):
        return (abs(a - b) / max(abs(a), abs(b))).item()

    with torch.no_grad():
        images, _ = model.transform([image])
        features = list(model.backbone(images.tensors).values())
        head = model.head(features)
        anchors = model.anchor_generator(images, features)[0]
        boxes = model.box_coder.decode_single(head["bbox_regression"][0], anchors)
        boxes = box_ops.clip_boxes_to_image(boxes, images.image_sizes[0])
        scores = torch.nn.functional.softmax(head["cls_logits"][0], dim=-1)
    score_gap, iou_gap = float("inf"), float("inf")
    kept_boxes, kept_scores, kept_labels = [], [], []
    for label in range(1, scores.shape[1]):
        s = scores[:, label].double()
        keep = s > model.score_thresh
        s, b = s[keep], boxes[keep].double()
        order = torch.argsort(s, descending=True)
        s, b = s[order], b[order]
        k = min(model.topk_candidates, len(s))
        if k < len(s):
            score_gap = min(score_gap, rel(s[k - 1], s[k]))
        s, b = s[:k], b[:k]
        iou = box_iou(b, b)
        i, j = torch.triu_indices(k, k, 1)
        iou_gap = min(iou_gap, (iou[i, j] - model.nms_thresh).abs().min().item())
        close = iou[i, j] > model.nms_thresh
        for a, c in zip(i[close].tolist(), j[close].tolist()):
            score_gap = min(score_gap, rel(s[a], s[c]))
        kept_boxes.append(b.float())
        kept_scores.append(s)
        kept_labels.append(torch.full((k,), label))
    s = torch.cat(kept_scores)
    keep = box_ops.batched_nms(torch.cat(kept_boxes), s.float(), torch.cat(kept_labels),
                               model.nms_thresh)
    final = s[keep][: model.detections_per_img + 1]
    for a, c in zip(final[:-1], final[1:]):
        score_gap = min(score_gap, rel(a, c))
    return score_gap, iou_gap


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "models"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--classes", type=int, default=4, help="including the background")
    ap.add_argument("--width", type=float, default=0.25)
    ap.add_argument("--detections", type=int, default=20)
    ap.add_argument("--topk", type=int, default=50, help="candidates per class before NMS")
    ap.add_argument("--min-gap", type=float, default=1e-4)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(args.seed)
    model = build(args.size, args.classes, args.width, args.detections, args.topk)
    model = export_zoo.realistic_norms(model, (1, 3, args.size, args.size), args.seed,
                                       calib_forward=calibrate)
    rng = np.random.default_rng(args.seed)
    image = rng.random((3, args.size, args.size), dtype=np.float32)  # an image in [0, 1]
    x = torch.from_numpy(image)
    score_gap, iou_gap = decision_margins(model, x)
    print(f"smallest relative gap between deciding scores {score_gap:.3g}, "
          f"smallest |IoU - nms_thresh| {iou_gap:.3g}")
    if min(score_gap, iou_gap) < args.min_gap:
        sys.exit(f"seed {args.seed}: a margin below --min-gap {args.min_gap}; try another seed")

    path = os.path.join(args.out, NAME + ".onnx")
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, ([x],), path, opset_version=14, input_names=["images"],
                      output_names=OUTPUTS, **legacy)
    with torch.no_grad():
        y = model([x])[0]
    np.save(os.path.join(args.out, NAME + "_input.npy"), image)
    for key in OUTPUTS:
        np.save(os.path.join(args.out, f"{NAME}_{key}.npy"), y[key].numpy())
    print(f"{path}: {os.path.getsize(path)} bytes, {len(y['scores'])} detections, "
          f"scores {y['scores'].min().item():.4f}..{y['scores'].max().item():.4f}, "
          f"labels {y['labels'].tolist()}")


if __name__ == "__main__":
    main()
