"""External data as ONNX writes it: onnx.save_model(..., save_as_external_data=True)."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vkgraph


def linear_model(rng):
    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Add", ["h", "b1"], ["hb"]),
            helper.make_node("Relu", ["hb"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"]),
        ],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    ref = lambda x: np.maximum(x @ w1 + b1, 0) @ w2  # noqa: E731
    return model, ref


@pytest.mark.parametrize("one_file", [True, False])
def test_saved_with_external_data(tmp_path, one_file):
    rng = np.random.default_rng(15)
    model, ref = linear_model(rng)
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True,
                    all_tensors_to_one_file=one_file, location="weights.bin", size_threshold=0)
    data_files = [p for p in tmp_path.iterdir() if p.name != "model.onnx"]
    assert len(data_files) == (1 if one_file else 3)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    y = vkgraph.InferenceSession(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref(x), rtol=1e-4, atol=1e-5)

    # As bytes, the data's folder must be given.
    data = path.read_bytes()
    with pytest.raises(vkgraph.InvalidArgument, match="external_data_dir"):
        vkgraph.InferenceSession(data)
    options = vkgraph.SessionOptions()
    options.external_data_dir = str(tmp_path)
    y = vkgraph.InferenceSession(data, options).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, ref(x), rtol=1e-4, atol=1e-5)


def test_missing_external_data_file(tmp_path):
    model, _ = linear_model(np.random.default_rng(1))
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="weights.bin",
                    size_threshold=0)
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(vkgraph.IoError, match="weights.bin"):
        vkgraph.InferenceSession(str(path))
