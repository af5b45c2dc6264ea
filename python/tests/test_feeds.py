"""run()'s inputs and outputs at the copy level: an array that is already C-contiguous, native
and of the computed type is read in place (one copy, into the device's staging); others are
converted once; outputs are arrays of their own."""

import numpy as np
import pytest

import vkgraph
from models import binary, matmul, unary


def addresses(session, feeds):
    return session._sess.feed_addresses(feeds)


def test_contiguous_arrays_are_read_in_place():
    session = vkgraph.InferenceSession(binary("Add", np.float32, shape=(3, 5)))
    rng = np.random.default_rng(11)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5)).astype(np.float32)
    assert addresses(session, {"a": a, "b": b}) == {"a": a.ctypes.data, "b": b.ctypes.data}
    # A read-only array is read in place too: run() never writes its inputs.
    b.flags.writeable = False
    assert addresses(session, {"a": a, "b": b})["b"] == b.ctypes.data
    before_a, before_b = a.copy(), b.copy()
    (out,) = session.run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(out, before_a + before_b)
    np.testing.assert_array_equal(a, before_a)
    np.testing.assert_array_equal(b, before_b)


def test_other_layouts_and_types_are_converted_once():
    session = vkgraph.InferenceSession(binary("Sub", np.float32, shape=(3, 4)))
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4, 3)).astype(np.float32).T  # Fortran-ordered view
    b = rng.standard_normal((3, 8)).astype(np.float32)[:, ::2]  # strided
    swapped = np.ascontiguousarray(a).astype(">f4")  # other byte order
    fed = addresses(session, {"a": a, "b": b})
    assert fed["a"] != a.ctypes.data and fed["b"] != b.ctypes.data
    assert addresses(session, {"a": swapped, "b": b})["a"] != swapped.ctypes.data
    want = a - b
    np.testing.assert_array_equal(session.run(None, {"a": a, "b": b})[0], want)
    np.testing.assert_array_equal(session.run(None, {"a": swapped, "b": b})[0], want)
    # Converted, not changed in place.
    assert not a.flags.c_contiguous and swapped.dtype == np.dtype(">f4")


def test_declared_types_vkgraph_widens_are_converted():
    # A uint8 input computes in int32: the array is widened once; the result comes back uint8.
    session = vkgraph.InferenceSession(binary("Add", np.uint8, shape=(2, 6)))
    rng = np.random.default_rng(13)
    a = rng.integers(0, 100, (2, 6)).astype(np.uint8)
    b = rng.integers(0, 100, (2, 6)).astype(np.uint8)
    assert addresses(session, {"a": a, "b": b})["a"] != a.ctypes.data
    (out,) = session.run(None, {"a": a, "b": b})
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, a + b)
    # float64 narrows to float32 on the way in.
    session = vkgraph.InferenceSession(binary("Mul", np.float64, shape=(4,)))
    x = rng.standard_normal(4)
    y = rng.standard_normal(4)
    (out,) = session.run(None, {"a": x, "b": y})
    np.testing.assert_allclose(out, (x.astype(np.float32) * y.astype(np.float32)), rtol=1e-6)


def test_results_match_a_fed_copy_over_many_runs():
    # The in-place path and a private copy give the same bits, run after run, with the inputs
    # changed between runs (nothing is cached from the previous array).
    model, w = matmul(64)
    session = vkgraph.InferenceSession(model)
    rng = np.random.default_rng(14)
    for _ in range(3):
        x = rng.standard_normal((64, 64)).astype(np.float32)
        (in_place,) = session.run(None, {"x": x})
        (copied,) = session.run(None, {"x": np.asfortranarray(x)})
        np.testing.assert_array_equal(in_place, copied)
        np.testing.assert_allclose(in_place, x.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_outputs_are_arrays_of_their_own():
    # An output that is the input itself (Identity) is still a new array: writing it leaves
    # the input, and the next run's output, alone.
    session = vkgraph.InferenceSession(unary("Identity", np.float32, shape=(2, 3)))
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    (y,) = session.run(None, {"x": x})
    assert y.ctypes.data != x.ctypes.data and y.flags.c_contiguous and y.flags.writeable
    y[...] = -7
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    (again,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(again, x)
    assert again.ctypes.data != y.ctypes.data


def test_shape_and_type_errors_name_the_input():
    session = vkgraph.InferenceSession(binary("Add", np.float32, shape=(3, 5)))
    a = np.ones((3, 5), np.float32)
    with pytest.raises(vkgraph.InvalidArgument, match=r"input 'b' has shape \[5, 3\], "
                       r"expected \[3, 5\]"):
        session.run(None, {"a": a, "b": np.ones((5, 3), np.float32)})
    with pytest.raises(vkgraph.InvalidArgument, match=r"input 'b' has shape \[15\]"):
        session.run(None, {"a": a, "b": np.ones(15, np.float32)})
    with pytest.raises(vkgraph.InvalidArgument, match=r"'b': got tensor\(int32\), expected "
                       r"tensor\(float\)"):
        session.run(None, {"a": a, "b": np.ones((3, 5), np.int32)})
    with pytest.raises(vkgraph.InvalidArgument, match="unknown input 'c'"):
        addresses(session, {"a": a, "c": a})
    # Still usable.
    np.testing.assert_array_equal(session.run(None, {"a": a, "b": a})[0], a + a)


def test_empty_and_scalar_inputs():
    session = vkgraph.InferenceSession(binary("Add", np.float32, shape=("n", 3)))
    empty = np.zeros((0, 3), np.float32)
    (out,) = session.run(None, {"a": empty, "b": empty})
    assert out.shape == (0, 3) and out.dtype == np.float32
    scalar = vkgraph.InferenceSession(binary("Mul", np.float32, shape=()))
    (out,) = scalar.run(None, {"a": np.array(3, np.float32), "b": np.array(-2.5, np.float32)})
    assert out.shape == () and out == -7.5
