"""vkgraph: run ONNX models on any Vulkan GPU, with onnxruntime's Python API.

    import vkgraph
    session = vkgraph.InferenceSession("models/digits.onnx")
    logits = session.run(None, {"input": images})[0]

Scripts written for onnxruntime need only the import changed; see the README's table for
what each onnxruntime call does here.
"""

from ._vkgraph import (  # noqa: F401  (re-exported)
    __version__,
    DeviceLost,
    Error,
    InvalidArgument,
    InvalidState,
    IoError,
    ModelFormat,
    OutOfMemory,
    Unsupported,
    VulkanError,
)
from .session import (  # noqa: F401
    Device,
    ExecutionMode,
    GraphOptimizationLevel,
    InferenceSession,
    ModelMetadata,
    NodeArg,
    RunOptions,
    SessionOptions,
    get_all_providers,
    get_available_providers,
    get_device,
    get_devices,
)
from .io_binding import IOBinding, empty  # noqa: F401

__all__ = [
    "__version__",
    "Device",
    "DeviceLost",
    "Error",
    "IOBinding",
    "empty",
    "ExecutionMode",
    "GraphOptimizationLevel",
    "InferenceSession",
    "InvalidArgument",
    "InvalidState",
    "IoError",
    "ModelFormat",
    "ModelMetadata",
    "NodeArg",
    "OutOfMemory",
    "RunOptions",
    "SessionOptions",
    "Unsupported",
    "VulkanError",
    "get_all_providers",
    "get_available_providers",
    "get_device",
    "get_devices",
]
