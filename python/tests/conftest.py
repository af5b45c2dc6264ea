"""pytest setup: test the package in the build tree, on lavapipe, under validation.

tools/test.sh runs `/usr/bin/python3 -m pytest python/tests`; VKGRAPH_BUILD_DIR picks a build
tree other than ./build. Like the C++ GPU tests, every test runs under the Khronos validation
layer with synchronization validation, and a validation message fails the test.
"""

import os
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("VKGRAPH_BUILD_DIR", REPO / "build"))
if (BUILD / "python" / "vkgraph").is_dir():
    sys.path.insert(0, str(BUILD / "python"))

LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
if os.path.exists(LAVAPIPE):
    os.environ.setdefault("VK_DRIVER_FILES", LAVAPIPE)
os.environ.setdefault("LP_NUM_THREADS", "2")
os.environ.setdefault("VK_LOADER_DEBUG", "none")
os.environ.setdefault("VKGRAPH_VALIDATION", "1")
os.environ.setdefault("VKGRAPH_PIPELINE_CACHE", "off")  # never write the user's cache

import vkgraph  # noqa: E402
from vkgraph import _vkgraph  # noqa: E402

MODELS = REPO / "models"


@pytest.fixture(autouse=True)
def no_validation_messages():
    _vkgraph.take_validation_messages()
    yield
    messages = _vkgraph.take_validation_messages()
    assert not messages, "validation: " + "\n".join(messages)


@pytest.fixture(scope="session")
def digits_path():
    return str(MODELS / "digits.onnx")


@pytest.fixture(scope="session")
def digits_data():
    import numpy as np

    images = np.load(MODELS / "digits_holdout_input.npy")
    labels = np.load(MODELS / "digits_holdout_labels.npy")
    logits = np.load(MODELS / "digits_holdout_logits.npy")
    return images, labels, logits
