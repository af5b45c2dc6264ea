"""ONNX's own backend test runner (onnx.backend.test.BackendTest) against vkgraph.backend.

The cases are the node, simple, pytorch-converted and pytorch-operator folders of ONNX's test
data (Debian's libonnx-testdata, which python3-onnx links to); the "real" models are download
links and are left out. A case is skipped only when vkgraph raises vkgraph.Unsupported (an op,
type or attribute it does not handle): any other error, and any wrong answer, fails. The
comparison is ONNX's own (assert_similar_outputs: same dtype, then numpy's assert_allclose with
the case's rtol/atol, 1e-3/1e-7 unless the case says otherwise).

VKGRAPH_BACKEND_FILTER=regex narrows the cases (e.g. "test_conv" while debugging).
"""

import os
import unittest

import numpy as np
import onnx.backend.test

import vkgraph
import vkgraph.backend

# ONNX 1.12's runner compares through np.object, which NumPy 1.24 (Debian 12) removed; the
# runner means the builtin.
if "object" not in np.__dict__:
    np.object = object


class _Rep(vkgraph.backend.VkgraphRep):
    def run(self, inputs, **kwargs):
        try:
            return super().run(inputs, **kwargs)
        except vkgraph.Unsupported as e:
            raise unittest.SkipTest(f"vkgraph.Unsupported: {e}")


class _SkipUnsupported(vkgraph.backend.VkgraphBackend):
    """vkgraph.backend, with Unsupported turned into a skip for the runner."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        try:
            rep = super().prepare(model, device, **kwargs)
        except vkgraph.Unsupported as e:
            raise unittest.SkipTest(f"vkgraph.Unsupported: {e}")
        return _Rep(rep.session)


backend_test = onnx.backend.test.BackendTest(_SkipUnsupported, __name__)
if os.environ.get("VKGRAPH_BACKEND_FILTER"):
    backend_test.include(os.environ["VKGRAPH_BACKEND_FILTER"])

# The pytorch-operator add cases feed float64 values from uninitialized memory (1e-310 and
# 1e+200 side by side); vkgraph computes float64 in float32 (onnx_tensor.h) and refuses finite
# values beyond its range as InvalidArgument (an input, not an unsupported model feature, so
# not a skip). Expected failures: they still run, and a pass would fail (strict); the C++ runner
# counts them as errors.
backend_test.xfail(r"test_operator_add(_broadcast|_size1_right_broadcast|_size1_singleton_broadcast|constant)_cpu$")
# ONNX 1.12's data for these contradicts its own models, so no correct backend passes them:
# test_adam_multiple's outputs were made with epsilon 1e-2 while its model leaves epsilon at the
# schema default 1e-6 (onnx/onnx#7749); the CastLike bfloat16 models declare `like` [3, 4] where
# the data holds [1] (docs/notes/more-ops.md).
backend_test.xfail(r"test_adam_multiple_cpu$")
backend_test.xfail(r"test_castlike_(BFLOAT16_to_FLOAT|FLOAT_to_BFLOAT16)(_expanded)?_cpu$")


def _cases():
    for name, case in backend_test.test_cases.items():
        if "RealModel" in name:  # download links, not data
            continue
        # ONNX names two devices; vkgraph answers to "CPU" only (vkgraph/backend.py says why),
        # so the "CUDA" copies of every case would only count as skips.
        for attr in [a for a in vars(case) if a.startswith("test_") and a.endswith("_cuda")]:
            delattr(case, attr)
        yield name, case


globals().update(_cases())
