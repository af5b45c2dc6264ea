"""IO binding: run on NumPy arrays bound once, without copies where the device allows.

    binding = session.io_binding()
    x = vkgraph.empty((64, 1024, 1024), np.float32)   # page-aligned: the device imports it
    binding.bind_cpu_input("x", x)
    binding.bind_output("y")                          # vkgraph allocates it, page-aligned
    session.run_with_iobinding(binding)
    y = binding.get_outputs()[0]                      # valid until the next run

The device reads inputs from, and writes outputs into, the arrays themselves through
VK_EXT_external_memory_host when an array starts on a page boundary
(minImportedHostPointerAlignment, 4096 on lavapipe) and its allocation is a whole number of
pages: arrays from vkgraph.empty() are. Other arrays are copied once each way, and arrays of
types vkgraph computes wider (uint8 -> int32, bfloat16 bit patterns -> float32, ...) are
converted on the way in and out. Binding the same arrays run
after run replays the recorded command buffers; new arrays re-record them (cheap, but not
free), so bind once and write into the bound inputs.
"""

import ctypes
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _vkgraph

PAGE = 4096  # covers minImportedHostPointerAlignment on lavapipe and NVIDIA


def empty(shape: Sequence[int], dtype: Any = np.float32) -> np.ndarray:
    """An uninitialized array whose memory the device can import (page-aligned, whole pages)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    capacity = max(PAGE, -(-nbytes // PAGE) * PAGE)
    raw = np.empty(capacity + PAGE, np.uint8)
    offset = -raw.ctypes.data % PAGE
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def _capacity(array: np.ndarray) -> int:
    """Bytes usable from the array's first element: to the end of the contiguous buffer it is
    a view of, so that vkgraph.empty()'s page rounding counts."""
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    start = array.ctypes.data
    if base is array or not base.flags.c_contiguous:
        return array.nbytes
    end = base.ctypes.data + base.nbytes
    if not base.ctypes.data <= start < end:
        return array.nbytes
    usable = end - start
    if start % PAGE == 0:
        usable -= usable % PAGE  # whole pages, so that the device can import them
    return max(array.nbytes, usable)


def _from_pointer(buffer_ptr: int, element_type: Any, shape: Sequence[int]) -> np.ndarray:
    dtype = np.dtype(element_type)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = (ctypes.c_uint8 * nbytes).from_address(int(buffer_ptr))
    return np.frombuffer(raw, np.uint8).view(dtype).reshape(shape)


class IOBinding:
    """onnxruntime's IOBinding for CPU (NumPy) memory; from InferenceSession.io_binding()."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._inputs: Dict[str, np.ndarray] = {}
        self._outputs: Dict[str, Optional[np.ndarray]] = {}  # None: vkgraph allocates
        self._allocated: Dict[str, np.ndarray] = {}  # kept across runs, so bindings stay put
        self._results: List[np.ndarray] = []
        self.last_paths: Dict[str, str] = {}  # per name: "imported" or "copied" (last run)

    # --- inputs ---
    def bind_cpu_input(self, name: str, arr: np.ndarray) -> None:
        self._inputs[name] = arr

    def bind_input(self, name: str, device_type: str = "cpu", device_id: int = 0,
                   element_type: Any = None, shape: Optional[Sequence[int]] = None,
                   buffer_ptr: Optional[int] = None) -> None:
        """onnxruntime's form: CPU memory at `buffer_ptr` of `element_type` and `shape`."""
        self._check_cpu(device_type)
        if buffer_ptr is None or element_type is None or shape is None:
            raise _vkgraph.InvalidArgument("bind_input needs element_type, shape and buffer_ptr")
        self._inputs[name] = _from_pointer(buffer_ptr, element_type, shape)

    # --- outputs ---
    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0,
                    element_type: Any = None, shape: Optional[Sequence[int]] = None,
                    buffer_ptr: Optional[int] = None) -> None:
        """Without a buffer, vkgraph allocates the output (page-aligned) at the run."""
        self._check_cpu(device_type)
        if buffer_ptr is None:
            self._outputs[name] = None
        else:
            if element_type is None or shape is None:
                raise _vkgraph.InvalidArgument("bind_output with buffer_ptr needs element_type and shape")
            self._outputs[name] = _from_pointer(buffer_ptr, element_type, shape)

    def bind_cpu_output(self, name: str, arr: np.ndarray) -> None:
        """vkgraph's addition: the output is written into `arr`."""
        self._outputs[name] = arr

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._allocated.clear()

    def synchronize_inputs(self) -> None:
        """Nothing to do: a run reads the bound memory when it starts."""

    def synchronize_outputs(self) -> None:
        """Nothing to do: outputs are in place when run_with_iobinding returns."""

    # --- results ---
    def get_outputs(self) -> List[np.ndarray]:
        """The bound outputs, in binding order: the arrays themselves, rewritten by each run."""
        return list(self._results)

    def copy_outputs_to_cpu(self) -> List[np.ndarray]:
        return [r.copy() for r in self._results]

    # --- the run (InferenceSession.run_with_iobinding) ---
    @staticmethod
    def _check_cpu(device_type: str) -> None:
        if str(device_type).lower() != "cpu":
            raise _vkgraph.InvalidArgument(
                f"vkgraph binds CPU (NumPy) memory; device_type {device_type!r} is not supported")

    def _run(self) -> None:
        native = self._session._sess
        declared = {a.name: a for a in self._session.get_inputs()}
        inputs: Dict[str, Tuple[np.ndarray, int]] = {}
        for name, arr in self._inputs.items():
            inputs[name] = self._input_binding(name, arr, declared)
        plan = native.prepare_bound(inputs)
        outputs: Dict[str, Tuple[np.ndarray, int]] = {}
        declared_out = {o.name: o for o in self._session.get_outputs()}
        # Bound arrays of a declared type that vkgraph computes wider (uint8, bfloat16, ...):
        # the device writes an array of the computed type, converted into them after the run.
        converted: Dict[str, np.ndarray] = {}
        for name, shape, dtype in plan:
            arr = self._outputs.get(name)
            if arr is not None and arr.dtype != np.dtype(dtype):
                self._check_declared_output(name, arr, tuple(shape), declared_out[name].type)
                converted[name] = arr
                arr = None
            if arr is None:
                arr = self._allocated.get(name)
                if arr is None or arr.shape != tuple(shape) or arr.dtype != np.dtype(dtype):
                    arr = empty(shape, dtype)
                    self._allocated[name] = arr
            outputs[name] = (arr, _capacity(arr))
        for name in self._outputs:
            if name not in outputs:
                raise _vkgraph.InvalidArgument(f"unknown output '{name}'")
        self.last_paths = native.run_bound(inputs, outputs)
        self._results = []
        for name in self._outputs:
            result = _as_declared(outputs[name][0], declared_out[name].type)
            if name in converted:
                np.copyto(converted[name], result)
                result = converted[name]
                self.last_paths[name] = "copied"
            self._results.append(result)

    @staticmethod
    def _check_declared_output(name: str, arr: np.ndarray, shape: Tuple[int, ...],
                               type_string: str) -> None:
        want = _numpy_type(type_string)
        if arr.dtype != want:
            raise _vkgraph.InvalidArgument(
                f"output binding '{name}' must be {type_string} ({want}), got {arr.dtype}")
        if arr.shape != shape:
            raise _vkgraph.InvalidArgument(
                f"output binding '{name}' has shape {list(arr.shape)}, the output is {list(shape)}")
        if not arr.flags.writeable:
            raise _vkgraph.InvalidArgument(f"output binding '{name}' is read-only")

    def _input_binding(self, name: str, arr: Any, declared: Dict[str, Any]) -> Tuple[np.ndarray, int]:
        if name not in declared:
            names = ", ".join(declared)
            raise _vkgraph.InvalidArgument(f"unknown input '{name}'; the model's inputs are: {names}")
        arr = np.asarray(arr)
        if declared[name].type == _BFLOAT16:
            # Bit patterns in, float32 (what vkgraph computes bfloat16 in) to the device.
            try:
                arr = _vkgraph.bfloat16_bits_to_float32(arr)
            except _vkgraph.InvalidArgument as e:
                raise _vkgraph.InvalidArgument(f"input '{name}': {e}") from None
            return arr, _capacity(arr)
        want = _numpy_type(declared[name].type)
        if want is not None and arr.dtype != want:
            raise _vkgraph.InvalidArgument(
                f"unexpected input data type for '{name}': got {_type_name(arr.dtype)}, "
                f"expected {declared[name].type}")
        if arr.dtype == np.float64:  # refuses values beyond float32's range (onnx_tensor.h)
            arr = _vkgraph.narrow_float64(arr, name)
        computed = _COMPUTED.get(arr.dtype, arr.dtype)
        if arr.dtype != computed or not arr.flags.c_contiguous or not arr.dtype.isnative:
            arr = np.ascontiguousarray(arr, dtype=computed)  # a copy: not zero-copy
        return arr, _capacity(arr)


# Declared bfloat16 values cross as uint16 bit patterns (NumPy has no bfloat16) and are
# computed in float32; _vkgraph converts them both ways.
_BFLOAT16 = "tensor(bfloat16)"

# Types vkgraph computes wider than the model declares them (onnx_tensor.h).
_COMPUTED = {
    np.dtype(np.uint8): np.dtype(np.int32),
    np.dtype(np.int8): np.dtype(np.int32),
    np.dtype(np.uint16): np.dtype(np.int32),
    np.dtype(np.int16): np.dtype(np.int32),
    np.dtype(np.uint32): np.dtype(np.int64),
    np.dtype(np.uint64): np.dtype(np.int64),
}

_TYPES = {
    "float": np.float32, "float16": np.float16, "double": np.float64, "int64": np.int64,
    "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
    "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_,
    "bfloat16": np.uint16,
}


def _as_declared(arr: np.ndarray, type_string: str) -> np.ndarray:
    """A computed-type output as the model declares it (the array itself when they agree)."""
    if type_string == _BFLOAT16:
        return _vkgraph.float32_to_bfloat16_bits(arr)
    want = _numpy_type(type_string)
    return arr if want is None or arr.dtype == want else arr.astype(want)


def _numpy_type(type_string: str) -> Optional[np.dtype]:
    inner = type_string[len("tensor("):-1]
    return np.dtype(_TYPES[inner]) if inner in _TYPES else None


def _type_name(dtype: np.dtype) -> str:
    for name, t in _TYPES.items():
        if np.dtype(t) == dtype:
            return f"tensor({name})"
    return f"numpy dtype {dtype}"
