"""IO binding: NumPy arrays bound to the graph's inputs and outputs (Session::run_bound)."""

import ctypes

import numpy as np
import pytest

import vkgraph
from models import binary, matmul, model_bytes, unary
from onnx import TensorProto, helper


def relu_model(shape):
    return unary("Relu", np.float32, shape=shape)


def test_aligned_arrays_are_imported_and_replayed():
    session = vkgraph.InferenceSession(relu_model((256, 1024)))
    x = vkgraph.empty((256, 1024), np.float32)
    assert x.ctypes.data % 4096 == 0
    rng = np.random.default_rng(0)
    x[...] = rng.standard_normal(x.shape)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y")
    session.run_with_iobinding(binding)
    assert binding.last_paths == {"x": "imported", "y": "imported"}
    (y,) = binding.get_outputs()
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    # Writing into the bound input and running again: the device reads the array itself.
    x[...] = rng.standard_normal(x.shape)
    session.run_with_iobinding(binding)
    (y2,) = binding.get_outputs()
    assert y2 is y  # the same memory, rewritten in place
    np.testing.assert_array_equal(y2, np.maximum(x, 0))
    copies = binding.copy_outputs_to_cpu()
    assert copies[0] is not y and np.array_equal(copies[0], y)




def test_unaligned_arrays_are_copied():
    session = vkgraph.InferenceSession(binary("Mul", np.float32, shape=(3, 5)))
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal((3, 6)).astype(np.float32)[:, 1:]  # non-contiguous: converted
    out = np.full((3, 5), np.nan, np.float32)
    binding = session.io_binding()
    binding.bind_cpu_input("a", a)
    binding.bind_cpu_input("b", b)
    binding.bind_cpu_output("out", out)
    session.run_with_iobinding(binding)
    np.testing.assert_allclose(out, a * b, rtol=1e-6)
    assert binding.get_outputs()[0] is out
    assert binding.last_paths["a"] in ("imported", "copied")


def test_matches_run_on_the_digits_model(digits_path, digits_data):
    images, _, reference = digits_data
    session = vkgraph.InferenceSession(digits_path)
    plain = session.run(None, {"input": images})[0]
    binding = session.io_binding()
    x = vkgraph.empty(images.shape, np.float32)
    x[...] = images
    binding.bind_cpu_input("input", x)
    binding.bind_output("logits")
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.get_outputs()[0], plain)
    np.testing.assert_allclose(plain, reference, rtol=1e-4, atol=1e-4)
    # And back to run(): the session rebuilds for staged I/O.
    np.testing.assert_array_equal(session.run(None, {"input": images})[0], plain)


def test_onnxruntime_pointer_form():
    session = vkgraph.InferenceSession(relu_model((4, 4)))
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    y = np.zeros((4, 4), np.float32)
    binding = session.io_binding()
    binding.bind_input("x", "cpu", 0, np.float32, [4, 4], x.ctypes.data)
    binding.bind_output("y", "cpu", 0, np.float32, [4, 4], y.ctypes.data)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    with pytest.raises(vkgraph.InvalidArgument, match="cuda"):
        binding.bind_input("x", "cuda", 0, np.float32, [4, 4], x.ctypes.data)


def test_widened_types_convert():
    session = vkgraph.InferenceSession(binary("Add", np.uint8))
    a = np.arange(6, dtype=np.uint8).reshape(2, 3)
    b = (np.arange(6, dtype=np.uint8) * 3).reshape(2, 3)
    binding = session.io_binding()
    binding.bind_cpu_input("a", a)
    binding.bind_cpu_input("b", b)
    binding.bind_output("out")
    session.run_with_iobinding(binding)
    (out,) = binding.get_outputs()
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, a + b)


def test_output_that_is_an_input_is_copied():
    model = model_bytes(
        [helper.make_node("Relu", ["x"], ["r"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [8]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
    )
    session = vkgraph.InferenceSession(model)
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("r")
    binding.bind_output("x")
    session.run_with_iobinding(binding)
    r, echo = binding.get_outputs()
    np.testing.assert_array_equal(r, np.maximum(x, 0))
    np.testing.assert_array_equal(echo, x)
    assert binding.last_paths["x"] in ("imported", "copied")


def test_binding_errors():
    session = vkgraph.InferenceSession(relu_model((2, 3)))
    binding = session.io_binding()
    binding.bind_cpu_input("nope", np.zeros((2, 3), np.float32))
    with pytest.raises(vkgraph.InvalidArgument, match="unknown input 'nope'"):
        session.run_with_iobinding(binding)
    binding.clear_binding_inputs()
    binding.bind_cpu_input("x", np.zeros((2, 3), np.float64))
    with pytest.raises(vkgraph.InvalidArgument, match="tensor\\(double\\).*tensor\\(float\\)"):
        session.run_with_iobinding(binding)
    binding.clear_binding_inputs()
    binding.bind_cpu_input("x", np.zeros((2, 4), np.float32))
    with pytest.raises(vkgraph.InvalidArgument, match="shape"):
        session.run_with_iobinding(binding)
    binding.clear_binding_inputs()
    binding.bind_cpu_input("x", np.zeros((2, 3), np.float32))
    binding.bind_cpu_output("y", np.zeros((3, 2), np.float32))
    with pytest.raises(vkgraph.InvalidArgument, match="output 'y'"):
        session.run_with_iobinding(binding)
    readonly = np.zeros((2, 3), np.float32)
    readonly.flags.writeable = False
    binding.bind_cpu_output("y", readonly)
    with pytest.raises(vkgraph.InvalidArgument, match="read-only"):
        session.run_with_iobinding(binding)
    binding.clear_binding_outputs()
    binding.bind_output("z")
    with pytest.raises(vkgraph.InvalidArgument, match="unknown output 'z'"):
        session.run_with_iobinding(binding)
    session.close()
    with pytest.raises(vkgraph.InvalidState):
        session.run_with_iobinding(binding)


def test_declared_type_output_arrays_are_filled():
    """A bound output array of the declared type, where vkgraph computes wider (uint8 in
    int32), is written after the run, as onnxruntime fills a bound output buffer."""
    session = vkgraph.InferenceSession(binary("Add", np.uint8))
    a = np.arange(6, dtype=np.uint8).reshape(2, 3)
    b = (np.arange(6, dtype=np.uint8) * 5).reshape(2, 3)
    out = np.zeros((2, 3), np.uint8)
    binding = session.io_binding()
    binding.bind_cpu_input("a", a)
    binding.bind_cpu_input("b", b)
    binding.bind_cpu_output("out", out)
    session.run_with_iobinding(binding)
    assert binding.get_outputs()[0] is out and binding.last_paths["out"] == "copied"
    np.testing.assert_array_equal(out, a + b)
    binding.bind_cpu_output("out", np.zeros((2, 3), np.int16))
    with pytest.raises(vkgraph.InvalidArgument, match=r"must be tensor\(uint8\)"):
        session.run_with_iobinding(binding)
    binding.bind_cpu_output("out", np.zeros((3, 2), np.uint8))
    with pytest.raises(vkgraph.InvalidArgument, match="shape"):
        session.run_with_iobinding(binding)


def test_bfloat16_bit_patterns():
    bf16 = TensorProto.BFLOAT16
    session = vkgraph.InferenceSession(model_bytes(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", bf16, [4, 8])],
        [helper.make_tensor_value_info("y", bf16, [4, 8])],
    ))
    values = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)
    want = (np.maximum((bits.astype(np.uint32) << 16).view(np.float32), 0).view(np.uint32)
            >> 16).astype(np.uint16)
    binding = session.io_binding()
    binding.bind_cpu_input("x", bits)
    binding.bind_output("y")
    session.run_with_iobinding(binding)
    (y,) = binding.get_outputs()
    assert y.dtype == np.uint16
    np.testing.assert_array_equal(y, want)
    into = np.zeros((4, 8), np.uint16)
    binding.bind_cpu_output("y", into)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(into, want)
    binding.bind_cpu_input("x", values)
    with pytest.raises(vkgraph.InvalidArgument, match="input 'x'.*uint16 bit patterns"):
        session.run_with_iobinding(binding)
