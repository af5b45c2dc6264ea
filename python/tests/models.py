"""Small ONNX models built with onnx.helper, for the tests."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NUMPY_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int16): TensorProto.INT16,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.uint16): TensorProto.UINT16,
    np.dtype(np.uint32): TensorProto.UINT32,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def model_bytes(nodes, inputs, outputs, initializers=(), opset=13, **model_fields):
    graph = helper.make_graph(nodes, "test", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **model_fields)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def binary(op, dtype, shape=(2, 3), out_dtype=None):
    """out = op(a, b) for two inputs of `dtype`."""
    t = NUMPY_TO_ONNX[np.dtype(dtype)]
    o = NUMPY_TO_ONNX[np.dtype(out_dtype or dtype)]
    return model_bytes(
        [helper.make_node(op, ["a", "b"], ["out"])],
        [helper.make_tensor_value_info("a", t, shape), helper.make_tensor_value_info("b", t, shape)],
        [helper.make_tensor_value_info("out", o, shape)],
    )


def unary(op, dtype, shape=(2, 3), out_dtype=None, **attrs):
    t = NUMPY_TO_ONNX[np.dtype(dtype)]
    o = NUMPY_TO_ONNX[np.dtype(out_dtype or dtype)]
    return model_bytes(
        [helper.make_node(op, ["x"], ["y"], **attrs)],
        [helper.make_tensor_value_info("x", t, shape)],
        [helper.make_tensor_value_info("y", o, shape)],
    )


def matmul(n, dynamic=False):
    """y = x @ w with a fixed random w: heavy enough to keep lavapipe busy for a while."""
    w = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
    rows = "rows" if dynamic else n
    return (
        model_bytes(
            [helper.make_node("MatMul", ["x", "w"], ["y"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, n])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])],
            [numpy_helper.from_array(w, "w")],
        ),
        w,
    )
