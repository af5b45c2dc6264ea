"""InferenceSession: the onnxruntime-shaped API on the bundled model and small models."""

import json
import os
import pathlib
import re
import threading
import time

import numpy as np
import pytest

import vkgraph
from models import binary, matmul, model_bytes, unary
from onnx import TensorProto, helper


def test_version_and_devices():
    # The version is the CMake project's, the one the C++ package and pkg-config files carry.
    cmake = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    declared = re.search(r"project\(vkgraph VERSION ([0-9.]+)", cmake).group(1)
    assert vkgraph.__version__ == declared
    devices = vkgraph.get_devices()
    assert devices and devices[0].index == 0
    assert any("llvmpipe" in d.name for d in devices)
    assert vkgraph.get_device() in ("CPU", "GPU")
    assert vkgraph.get_available_providers() == ["VkgraphExecutionProvider"]


def test_quick_start_classifies_the_held_out_digits(digits_path, digits_data):
    images, labels, reference = digits_data
    session = vkgraph.InferenceSession(digits_path)
    logits = session.run(None, {"input": images})[0]
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32
    assert logits.shape == (100, 10)
    np.testing.assert_allclose(logits, reference, rtol=1e-4, atol=1e-4)
    assert (logits.argmax(1) == labels).sum() >= 95


def test_inputs_outputs_as_onnxruntime_describes_them(digits_path):
    session = vkgraph.InferenceSession(digits_path)
    (inp,) = session.get_inputs()
    (out,) = session.get_outputs()
    assert (inp.name, inp.shape, inp.type) == ("input", ["batch", 1, 8, 8], "tensor(float)")
    assert (out.name, out.shape, out.type) == ("logits", ["batch", 10], "tensor(float)")
    assert "tensor(float)" in repr(inp)
    assert session.get_providers() == ["VkgraphExecutionProvider"]
    assert "llvmpipe" in session.get_device_name()
    # conftest.py turns validation on: every test here runs under it.
    assert session.get_provider_options()["VkgraphExecutionProvider"]["validation"] == "1"


def test_validation_option_overrides_the_environment(digits_path, digits_data):
    options = vkgraph.SessionOptions()
    options.validation = False
    session = vkgraph.InferenceSession(digits_path, options)
    assert session.get_provider_options()["VkgraphExecutionProvider"]["validation"] == "0"
    np.testing.assert_allclose(session.run(None, {"input": digits_data[0]})[0], digits_data[2],
                               rtol=1e-4, atol=1e-4)


def test_unnamed_dynamic_dim_is_none():
    model = model_bytes(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
    )
    session = vkgraph.InferenceSession(model)
    assert session.get_inputs()[0].shape == [None, 4]
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], np.maximum(x, 0))


def test_modelmeta():
    model = model_bytes(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        producer_name="unit-test",
        model_version=7,
        doc_string="a relu",
    )
    import onnx

    proto = onnx.load_from_string(model)
    onnx.helper.set_model_props(proto, {"author": "vkgraph"})
    meta = vkgraph.InferenceSession(proto.SerializeToString()).get_modelmeta()
    assert meta.producer_name == "unit-test"
    assert meta.version == 7
    assert meta.description == "a relu"
    assert meta.graph_name == "test"
    assert meta.custom_metadata_map == {"author": "vkgraph"}


def test_path_like_and_bytes(digits_path, digits_data):
    images = digits_data[0][:4]
    by_path = vkgraph.InferenceSession(pathlib.Path(digits_path)).run(None, {"input": images})[0]
    data = pathlib.Path(digits_path).read_bytes()
    for model in (data, bytearray(data), memoryview(data)):
        got = vkgraph.InferenceSession(model).run(None, {"input": images})[0]
        np.testing.assert_array_equal(got, by_path)
    with pytest.raises(TypeError):
        vkgraph.InferenceSession(42)


def test_output_names_select_and_order():
    model = model_bytes(
        [helper.make_node("Neg", ["x"], ["neg"]), helper.make_node("Abs", ["x"], ["abs"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info("neg", TensorProto.FLOAT, [5]),
         helper.make_tensor_value_info("abs", TensorProto.FLOAT, [5])],
    )
    session = vkgraph.InferenceSession(model)
    x = np.array([-2, -1, 0.5, 1, 3], np.float32)
    neg, ab = session.run(None, {"x": x})
    np.testing.assert_array_equal(neg, -x)
    np.testing.assert_array_equal(ab, np.abs(x))
    (only,) = session.run(["abs"], {"x": x})
    np.testing.assert_array_equal(only, np.abs(x))
    swapped = session.run(["abs", "neg"], {"x": x})
    np.testing.assert_array_equal(swapped[1], -x)
    assert session.run([], {"x": x})[0].shape == (5,)
    with pytest.raises(vkgraph.InvalidArgument, match="unknown output 'nope'"):
        session.run(["nope"], {"x": x})
    with pytest.raises(TypeError):
        session.run("abs", {"x": x})
    with pytest.raises(TypeError, match="names are str"):
        session.run([0], {"x": x})
    np.testing.assert_array_equal(session.run(("abs",), {"x": x})[0], np.abs(x))


# dtype in and out: the declared type goes in and comes out, whatever vkgraph computes in.
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.int64, np.int32, np.int8, np.uint8, np.float64, np.int16,
              np.uint16, np.uint32])
def test_dtypes_in_and_out(dtype):
    session = vkgraph.InferenceSession(binary("Add", dtype))
    rng = np.random.default_rng(3)
    a = rng.integers(0, 50, (2, 3)).astype(dtype)
    b = rng.integers(0, 50, (2, 3)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a = (a + rng.random((2, 3))).astype(dtype)
    assert session.get_inputs()[0].type == session.get_outputs()[0].type
    (out,) = session.run(None, {"a": a, "b": b})
    assert out.dtype == np.dtype(dtype)
    tol = 1e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(out.astype(np.float64), a.astype(np.float64) + b, rtol=tol)


def test_float64_beyond_float32_range_is_refused():
    # vkgraph computes float64 in float32; a finite value beyond its range would become inf.
    session = vkgraph.InferenceSession(binary("Add", np.float64))
    rng = np.random.default_rng(5)
    a = rng.random((2, 3)) + 0.5
    b = a.copy()
    b[1, 2] = -2.4e198
    for feed in ({"a": a, "b": b}, {"a": a, "b": b[:, ::-1]}):  # contiguous or not
        with pytest.raises(vkgraph.InvalidArgument) as e:
            session.run(None, feed)
        assert "input 'b': float64 value -2.4e+198 is beyond float32's range" in str(e.value)
    binding = session.io_binding()
    binding.bind_cpu_input("a", a)
    binding.bind_cpu_input("b", b)
    binding.bind_output("out")
    with pytest.raises(vkgraph.InvalidArgument, match="input 'b': float64 value -2.4e"):
        session.run_with_iobinding(binding)
    # Precision loss, underflow, NaN and inf are kept as float32 has them.
    b = np.array([[1e-310, np.nan, np.inf], [-np.inf, 3e38, 0.1]])
    (out,) = session.run(None, {"a": a, "b": b})
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_bool_in_and_out():
    session = vkgraph.InferenceSession(binary("And", np.bool_))
    assert session.get_inputs()[0].type == "tensor(bool)"
    rng = np.random.default_rng(4)
    a, b = rng.random((2, 3)) > 0.5, rng.random((2, 3)) > 0.5
    (out,) = session.run(None, {"a": a, "b": b})
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, a & b)


def bfloat16_model():
    """widened = Cast(bits -> float), narrowed = Cast(x -> bfloat16), relu = Relu(bits)."""
    bf16, f32 = TensorProto.BFLOAT16, TensorProto.FLOAT
    return model_bytes(
        [helper.make_node("Cast", ["bits"], ["widened"], to=f32),
         helper.make_node("Cast", ["x"], ["narrowed"], to=bf16),
         helper.make_node("Relu", ["bits"], ["relu"])],
        [helper.make_tensor_value_info("bits", bf16, [2, 3]),
         helper.make_tensor_value_info("x", f32, [2, 3])],
        [helper.make_tensor_value_info("widened", f32, [2, 3]),
         helper.make_tensor_value_info("narrowed", bf16, [2, 3]),
         helper.make_tensor_value_info("relu", bf16, [2, 3])],
    )


def bfloat16_reference(values):
    """The bit patterns of float32 values truncated to bfloat16 (vkgraph's and ONNX 1.12's Cast)."""
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def test_bfloat16_as_uint16_bit_patterns():
    session = vkgraph.InferenceSession(bfloat16_model())
    assert [i.type for i in session.get_inputs()] == ["tensor(bfloat16)", "tensor(float)"]
    assert [o.type for o in session.get_outputs()] == ["tensor(float)", "tensor(bfloat16)",
                                                       "tensor(bfloat16)"]
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3)).astype(np.float32) * 100
    bits = bfloat16_reference(rng.standard_normal((2, 3)).astype(np.float32))
    as_float = (bits.astype(np.uint32) << 16).view(np.float32)
    widened, narrowed, relu = session.run(None, {"bits": bits, "x": x})
    assert widened.dtype == np.float32 and narrowed.dtype == relu.dtype == np.uint16
    np.testing.assert_array_equal(widened, as_float)
    np.testing.assert_array_equal(narrowed, bfloat16_reference(x))
    np.testing.assert_array_equal(relu, bfloat16_reference(np.maximum(as_float, 0)))
    # Any byte order or layout of the bit patterns is converted, as for other types.
    swapped = np.asfortranarray(bits).astype(">u2")
    np.testing.assert_array_equal(session.run(["widened"], {"bits": swapped, "x": x})[0], as_float)
    # float32 values are refused, as onnxruntime refuses any type but the declared one.
    with pytest.raises(vkgraph.InvalidArgument, match=r"got tensor\(float\), expected "
                       r"tensor\(bfloat16\) \(as uint16 bit patterns"):
        session.run(None, {"bits": as_float, "x": x})
    with pytest.raises(vkgraph.InvalidArgument, match=r"got tensor\(int16\)"):
        session.run(None, {"bits": bits.view(np.int16), "x": x})


def test_bfloat16_from_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    session = vkgraph.InferenceSession(bfloat16_model())
    values = np.array([[1.5, -2.0, 0.25], [3.0, -0.5, 8.0]], np.float32)
    x = np.zeros((2, 3), np.float32)
    (widened,) = session.run(["widened"], {"bits": values.astype(ml_dtypes.bfloat16), "x": x})
    np.testing.assert_array_equal(widened, values)


def test_comparison_gives_bool_from_float():
    session = vkgraph.InferenceSession(binary("Less", np.float32, out_dtype=np.bool_))
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = np.array([[3, 2, 1], [6, 5, 4]], np.float32)
    np.testing.assert_array_equal(session.run(None, {"a": a, "b": b})[0], a < b)


def test_non_contiguous_inputs_are_converted():
    session = vkgraph.InferenceSession(binary("Sub", np.float32, shape=(3, 4)))
    rng = np.random.default_rng(5)
    big = rng.standard_normal((4, 3)).astype(np.float32)
    a = big.T  # Fortran-ordered view
    b = rng.standard_normal((3, 8)).astype(np.float32)[:, ::2]  # strided
    assert not a.flags.c_contiguous and not b.flags.c_contiguous
    np.testing.assert_allclose(session.run(None, {"a": a, "b": b})[0], a - b, rtol=1e-6)
    swapped = np.ascontiguousarray(a).astype(">f4")  # big-endian: same type, other byte order
    np.testing.assert_allclose(session.run(None, {"a": swapped, "b": b})[0], a - b, rtol=1e-6)


def test_wrong_dtype_is_refused_like_onnxruntime(digits_path, digits_data):
    session = vkgraph.InferenceSession(digits_path)
    with pytest.raises(vkgraph.InvalidArgument) as e:
        session.run(None, {"input": digits_data[0].astype(np.float64)})
    assert "tensor(double)" in str(e.value) and "tensor(float)" in str(e.value)
    assert "'input'" in str(e.value)
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError too
        session.run(None, {"input": digits_data[0].astype(np.int32)})
    with pytest.raises(vkgraph.InvalidArgument, match="numpy"):
        session.run(None, {"input": object()})


def test_wrong_shape_unknown_and_missing_inputs(digits_path, digits_data):
    session = vkgraph.InferenceSession(digits_path)
    with pytest.raises(vkgraph.InvalidArgument, match=r"shape \[100, 64\]"):
        session.run(None, {"input": digits_data[0].reshape(100, 64)})
    with pytest.raises(vkgraph.InvalidArgument, match="unknown input 'images'.*input"):
        session.run(None, {"images": digits_data[0]})
    with pytest.raises(vkgraph.InvalidArgument, match="missing input 'input'"):
        session.run(None, {})
    with pytest.raises(TypeError):
        session.run(None, [digits_data[0]])
    # The session still works after refusing.
    assert session.run(None, {"input": digits_data[0]})[0].shape == (100, 10)


def test_corrupted_and_missing_model_files(tmp_path, digits_path):
    data = bytearray(pathlib.Path(digits_path).read_bytes())
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(bytes(data[: len(data) // 3]) + b"\xff" * 64)
    with pytest.raises(vkgraph.ModelFormat) as e:
        vkgraph.InferenceSession(str(bad))
    assert isinstance(e.value, vkgraph.Error) and "corrupt.onnx" in str(e.value)
    with pytest.raises(vkgraph.ModelFormat):
        vkgraph.InferenceSession(b"not a model")
    with pytest.raises(vkgraph.IoError, match="no_such.onnx"):
        vkgraph.InferenceSession(str(tmp_path / "no_such.onnx"))


def test_unsupported_op_raises_unsupported():
    model = model_bytes(
        [helper.make_node("StringNormalizer", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
    )
    with pytest.raises(vkgraph.Unsupported):
        vkgraph.InferenceSession(model)


def test_error_classes():
    kinds = [vkgraph.InvalidArgument, vkgraph.Unsupported, vkgraph.OutOfMemory,
             vkgraph.DeviceLost, vkgraph.VulkanError, vkgraph.InvalidState, vkgraph.IoError,
             vkgraph.ModelFormat]
    assert len(set(kinds)) == len(kinds)
    for k in kinds:
        assert issubclass(k, vkgraph.Error) and k.__module__ == "vkgraph"
    assert issubclass(vkgraph.OutOfMemory, MemoryError)


def test_memory_budget_gives_out_of_memory():
    options = vkgraph.SessionOptions()
    options.memory_budget = 1 << 20
    model, _ = matmul(1024)  # a 4 MiB weight in a 1 MiB budget
    with pytest.raises(vkgraph.OutOfMemory):
        vkgraph.InferenceSession(model, options)
    options.memory_budget = -1
    with pytest.raises(vkgraph.InvalidArgument, match="memory_budget"):
        vkgraph.InferenceSession(model, options)


def test_closed_session(digits_path, digits_data):
    with vkgraph.InferenceSession(digits_path) as session:
        session.run(None, {"input": digits_data[0]})
    for call in (lambda: session.run(None, {"input": digits_data[0]}), session.get_inputs,
                 session.get_outputs, session.get_modelmeta):
        with pytest.raises(vkgraph.InvalidState, match="closed"):
            call()
    session.close()  # closing twice is harmless


def test_session_options_refuse_unknown_attributes():
    options = vkgraph.SessionOptions()
    options.intra_op_num_threads = 4  # onnxruntime's, accepted
    options.graph_optimization_level = vkgraph.GraphOptimizationLevel.ORT_ENABLE_ALL
    with pytest.raises(AttributeError):
        options.enable_profilling = True


def test_device_by_name_and_index(digits_path, digits_data):
    index = next(d.index for d in vkgraph.get_devices() if "llvmpipe" in d.name)
    for device in ("llvmpipe", index, str(index)):
        options = vkgraph.SessionOptions()
        options.device = device
        session = vkgraph.InferenceSession(digits_path, options)
        assert "llvmpipe" in session.get_device_name()
    providers = [("VkgraphExecutionProvider", {"device_id": index}), "CPUExecutionProvider"]
    assert "llvmpipe" in vkgraph.InferenceSession(digits_path, providers=providers).get_device_name()
    options = vkgraph.SessionOptions()
    options.device = "no-such-gpu"
    with pytest.raises(vkgraph.Error, match="no-such-gpu"):
        vkgraph.InferenceSession(digits_path, options)


def test_pipeline_cache_folder(tmp_path, digits_path, digits_data):
    folder = tmp_path / "cache"
    options = vkgraph.SessionOptions()
    options.pipeline_cache = str(folder)
    session = vkgraph.InferenceSession(digits_path, options)
    assert session.run(None, {"input": digits_data[0]})[0].shape == (100, 10)
    session.close()  # the last session on that device: the device goes, saving its cache
    saved = [p for p in folder.iterdir() if p.is_file()]
    assert len(saved) == 1 and saved[0].stat().st_size > 0, saved
    # A session on the saved cache gives the same answer.
    again = vkgraph.InferenceSession(digits_path, options)
    np.testing.assert_allclose(again.run(None, {"input": digits_data[0]})[0], digits_data[2],
                               rtol=1e-4, atol=1e-4)
    off = vkgraph.SessionOptions()
    off.pipeline_cache = "off"
    vkgraph.InferenceSession(digits_path, off).run(None, {"input": digits_data[0]})


def test_fixed_input_shapes(digits_path, digits_data):
    images = digits_data[0]
    options = vkgraph.SessionOptions()
    options.input_shapes = {"input": (4, 1, 8, 8)}
    session = vkgraph.InferenceSession(digits_path, options)
    np.testing.assert_allclose(session.run(None, {"input": images[:4]})[0], digits_data[2][:4],
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(vkgraph.InvalidArgument, match=r"expected \[4, 1, 8, 8\]"):
        session.run(None, {"input": images})
    options = vkgraph.SessionOptions()
    options.add_free_dimension_override_by_name("batch", 2)
    session = vkgraph.InferenceSession(digits_path, options)
    with pytest.raises(vkgraph.InvalidArgument, match=r"expected \[2, 1, 8, 8\]"):
        session.run(None, {"input": images[:3]})
    assert session.run(None, {"input": images[:2]})[0].shape == (2, 10)
    # A shape the model's declared [batch, 1, 8, 8] cannot take is refused at load.
    options = vkgraph.SessionOptions()
    options.input_shapes = {"input": (4, 64)}
    with pytest.raises(vkgraph.InvalidArgument, match=r"\[4, 64\] does not fit"):
        vkgraph.InferenceSession(digits_path, options)


def test_fusions_off_gives_the_same_answer(digits_path, digits_data):
    options = vkgraph.SessionOptions()
    options.graph_optimization_level = vkgraph.GraphOptimizationLevel.ORT_DISABLE_ALL
    unfused = vkgraph.InferenceSession(digits_path, options).run(None, {"input": digits_data[0]})
    np.testing.assert_allclose(unfused[0], digits_data[2], rtol=1e-4, atol=1e-4)


def test_fp16_mode(digits_path, digits_data):
    images, labels, reference = digits_data
    options = vkgraph.SessionOptions()
    options.fp16 = True
    session = vkgraph.InferenceSession(digits_path, options)
    assert session.get_inputs()[0].type == "tensor(float)"  # float32 in and out
    logits = session.run(None, {"input": images})[0]
    assert logits.dtype == np.float32
    error = np.abs(logits - reference).max() / np.abs(reference).max()
    assert 0 < error < 5e-3  # float16 storage rounds, but not by much
    assert (logits.argmax(1) == labels).sum() >= 95


def test_profiling_writes_a_chrome_trace(tmp_path, digits_path, digits_data):
    options = vkgraph.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "digits")
    session = vkgraph.InferenceSession(digits_path, options)
    for _ in range(3):
        session.run(None, {"input": digits_data[0]})
    path = session.end_profiling()
    assert path.startswith(str(tmp_path / "digits")) and path.endswith(".json")
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    runs = sorted({e["args"]["run"] for e in events})
    assert runs == [0, 1, 2]
    per_run = len(events) // 3
    assert per_run >= 5 and len(events) == 3 * per_run
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["name"] for e in events)
    assert any("Conv" in e["name"] for e in events)
    starts = [min(e["ts"] for e in events if e["args"]["run"] == r) for r in runs]
    assert starts == sorted(starts)
    # Profiling off: onnxruntime returns "".
    assert vkgraph.InferenceSession(digits_path).end_profiling() == ""


def test_sessions_in_threads(digits_path, digits_data):
    images, _, reference = digits_data
    model, w = matmul(64)
    x = np.random.default_rng(6).standard_normal((64, 64)).astype(np.float32)
    digits = [vkgraph.InferenceSession(digits_path) for _ in range(2)]
    mm = vkgraph.InferenceSession(model)
    errors = []

    def work(session, feed, want, rtol):
        try:
            for _ in range(5):
                got = session.run(None, feed)[0]
                np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-4)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    jobs = [(digits[0], {"input": images}, reference, 1e-4),
            (digits[1], {"input": images}, reference, 1e-4),
            (digits[1], {"input": images}, reference, 1e-4),  # one session from two threads
            (mm, {"x": x}, x @ w, 1e-4)]
    threads = [threading.Thread(target=work, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_run_releases_the_gil():
    model, _ = matmul(512)
    session = vkgraph.InferenceSession(model)
    x = np.random.default_rng(7).standard_normal((512, 512)).astype(np.float32)
    session.run(None, {"x": x})  # built and recorded: what follows is the run alone
    window = []
    done = threading.Event()

    def runner():
        start = time.perf_counter()
        session.run(None, {"x": x})
        window.extend([start, time.perf_counter()])
        done.set()

    stamps = []
    t = threading.Thread(target=runner)
    t.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
    t.join()
    start, end = window
    quarter = (end - start) / 4
    # This thread ran Python code in the middle of the run: only if run() let go of the GIL.
    inside = [s for s in stamps if start + quarter < s < end - quarter]
    assert len(inside) > 100, (len(inside), end - start)


def test_close_while_another_thread_runs():
    """close() waits for a run in progress, which finishes with the right answer; runs after
    it raise InvalidState. Never a crash, whichever thread gets there first."""
    model, w = matmul(512)
    session = vkgraph.InferenceSession(model)
    x = np.random.default_rng(9).standard_normal((512, 512)).astype(np.float32)
    session.run(None, {"x": x})
    started = threading.Event()
    outcome = []

    def runner():
        started.set()
        try:
            outcome.append(session.run(None, {"x": x})[0])
        except vkgraph.InvalidState as e:
            outcome.append(e)

    t = threading.Thread(target=runner)
    t.start()
    started.wait()
    time.sleep(0.01)
    session.close()
    t.join()
    (result,) = outcome
    if isinstance(result, np.ndarray):
        np.testing.assert_allclose(result, x @ w, rtol=1e-4, atol=1e-3)
    else:
        assert "closed" in str(result)
    with pytest.raises(vkgraph.InvalidState, match="closed"):
        session.run(None, {"x": x})
