"""InferenceSession and its options, shaped like onnxruntime's."""

import datetime
import enum
import os
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _vkgraph

PROVIDER = "VkgraphExecutionProvider"


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels. vkgraph's load-time fusions are on unless ORT_DISABLE_ALL."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for onnxruntime scripts; vkgraph's graph order is its own."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """What a session is built with.

    vkgraph's own options: ``fp16`` (float16 storage on the device, float32 in and out),
    ``device`` (an index or a name substring, as ``VKGRAPH_DEVICE``), ``pipeline_cache``
    (a folder or ``"off"``), ``validation`` (Khronos validation with synchronization
    validation), ``input_shapes`` (``{"input": (1, 3, 224, 224)}`` fixes dynamic dims at load),
    ``memory_budget`` (bytes of device memory, 0 = no limit), ``external_data_dir`` (the folder
    of a model's external data when the model is given as bytes; a path's own folder otherwise). ``None`` means the environment's
    choice (``VKGRAPH_DEVICE``, ``VKGRAPH_VALIDATION``, ``VKGRAPH_PIPELINE_CACHE``).

    onnxruntime's: ``enable_profiling`` and ``profile_file_prefix`` (a Chrome trace of per-node
    GPU times, written by ``end_profiling()``), ``graph_optimization_level``
    (``ORT_DISABLE_ALL`` turns vkgraph's fusions off), ``add_free_dimension_override_by_name``.
    Thread counts, execution mode, memory-arena and logging settings are accepted and have no
    effect. Any other attribute is refused, so a misspelt option is never silently ignored.
    """

    __slots__ = (
        "fp16",
        "device",
        "pipeline_cache",
        "validation",
        "input_shapes",
        "memory_budget",
        "external_data_dir",
        "enable_profiling",
        "profile_file_prefix",
        "graph_optimization_level",
        "_free_dimensions",
        # onnxruntime settings accepted without effect
        "intra_op_num_threads",
        "inter_op_num_threads",
        "execution_mode",
        "enable_mem_pattern",
        "enable_cpu_mem_arena",
        "use_deterministic_compute",
        "log_severity_level",
        "log_verbosity_level",
        "logid",
    )

    def __init__(self) -> None:
        self.fp16 = False
        self.device: Optional[Union[int, str]] = None
        self.pipeline_cache: Optional[str] = None
        self.validation: Optional[bool] = None
        self.input_shapes: Dict[str, Sequence[int]] = {}
        self.memory_budget = 0
        self.external_data_dir: Optional[str] = None
        self.enable_profiling = False
        self.profile_file_prefix = "vkgraph_profile"
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self._free_dimensions: Dict[str, int] = {}
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_mem_pattern = True
        self.enable_cpu_mem_arena = True
        self.use_deterministic_compute = False
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fixes every input dimension the model names ``dim_name`` (e.g. "batch")."""
        self._free_dimensions[str(dim_name)] = int(dim_value)


class RunOptions:
    """Accepted for onnxruntime scripts; vkgraph has no per-run settings."""

    def __init__(self) -> None:
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False


class NodeArg:
    """A model input or output: ``name``, ``shape`` (ints; a dimension's name or None where it
    is dynamic) and ``type`` ("tensor(float)"), as onnxruntime describes them."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name: str, shape: List[Union[int, str, None]], type: str) -> None:
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """The model's metadata fields, named as onnxruntime names them."""

    def __init__(self, fields: Dict[str, Any]) -> None:
        self.producer_name: str = fields["producer_name"]
        self.graph_name: str = fields["graph_name"]
        self.domain: str = fields["domain"]
        self.description: str = fields["description"]
        self.graph_description: str = fields["graph_description"]
        self.version: int = fields["version"]
        self.custom_metadata_map: Dict[str, str] = dict(fields["custom_metadata_map"])


class Device:
    """A Vulkan physical device, as ``SessionOptions.device`` selects it by index or name."""

    __slots__ = ("index", "name", "type", "api_version", "driver_version")

    def __init__(self, info: Dict[str, Any]) -> None:
        for key in self.__slots__:
            setattr(self, key, info[key])

    def __repr__(self) -> str:
        return f"Device(index={self.index}, name={self.name!r}, type={self.type!r})"


def get_devices() -> List[Device]:
    """The Vulkan devices vkgraph can run on, in index order."""
    return [Device(d) for d in _vkgraph.list_devices()]


def get_device() -> str:
    """onnxruntime's "CPU"/"GPU": "GPU" when a Vulkan GPU is present, else "CPU"."""
    return "GPU" if any(d.type != "cpu" for d in get_devices()) else "CPU"


def get_available_providers() -> List[str]:
    return [PROVIDER]


def get_all_providers() -> List[str]:
    return [PROVIDER]


def _provider_device(providers, provider_options) -> Optional[str]:
    """The device named in the vkgraph provider's options (``device_id`` or ``device``)."""
    if providers is None:
        return None
    for i, provider in enumerate(providers):
        name, opts = (provider, {}) if isinstance(provider, str) else provider
        if provider_options is not None and i < len(provider_options):
            opts = provider_options[i]
        if name == PROVIDER:
            for key in ("device_id", "device"):
                if key in opts:
                    return str(opts[key])
    return None


def _native_options(options: SessionOptions, device: Optional[str]) -> "_vkgraph.NativeOptions":
    native = _vkgraph.NativeOptions()
    native.fp16 = bool(options.fp16)
    native.fuse = options.graph_optimization_level != GraphOptimizationLevel.ORT_DISABLE_ALL
    native.profile = bool(options.enable_profiling)
    chosen = device if device is not None else options.device
    native.device = None if chosen is None else str(chosen)
    native.validation = None if options.validation is None else bool(options.validation)
    native.pipeline_cache = None if options.pipeline_cache is None else str(options.pipeline_cache)
    if int(options.memory_budget) < 0:
        raise _vkgraph.InvalidArgument(
            f"SessionOptions.memory_budget is {options.memory_budget}: bytes, >= 0 (0 = no limit)")
    native.memory_budget = int(options.memory_budget)
    if options.external_data_dir is not None:
        native.external_data_dir = os.fspath(options.external_data_dir)
    native.input_shapes = {str(k): [int(d) for d in v] for k, v in options.input_shapes.items()}
    return native


class InferenceSession:
    """Loads an ONNX model onto a Vulkan device and runs it.

    ``path_or_bytes``: a path (str or os.PathLike) or the serialized model. ``providers``
    accepts onnxruntime's lists; vkgraph has one provider, "VkgraphExecutionProvider", whose
    options may name the device (``device_id``), and ignores other names.

    Threads: ``run()`` releases the GIL. Sessions run concurrently with each other (those on
    one device share it; submissions to its queue are serialized); runs of one session from
    several threads take turns.
    """

    def __init__(
        self,
        path_or_bytes: Union[str, bytes, os.PathLike],
        sess_options: Optional[SessionOptions] = None,
        providers: Optional[Sequence[Any]] = None,
        provider_options: Optional[Sequence[Dict[str, Any]]] = None,
        **kwargs: Any,
    ) -> None:
        self._options = sess_options if sess_options is not None else SessionOptions()
        if isinstance(path_or_bytes, os.PathLike):
            path_or_bytes = os.fspath(path_or_bytes)
        if not isinstance(path_or_bytes, (str, bytes, bytearray, memoryview)):
            raise TypeError(
                "InferenceSession takes a model path (str, os.PathLike) or the model's bytes, "
                f"got {type(path_or_bytes).__name__}"
            )
        native = _native_options(self._options, _provider_device(providers, provider_options))
        self._sess = _vkgraph.Session(path_or_bytes, native)
        if self._options._free_dimensions:
            # The names of dynamic dims are known only once the model is parsed.
            shapes = self._free_dimension_shapes(native.input_shapes)
            if shapes != native.input_shapes:
                native.input_shapes = shapes
                self._sess = _vkgraph.Session(path_or_bytes, native)
        self._profile_started = datetime.datetime.now()

    def _free_dimension_shapes(self, fixed: Dict[str, List[int]]) -> Dict[str, List[int]]:
        shapes = dict(fixed)
        for name, shape, _, _ in self._sess.inputs():
            if name in shapes:
                continue
            resolved = [self._options._free_dimensions.get(d, -1) if isinstance(d, str)
                        else (-1 if d is None else d) for d in shape]
            if resolved != [-1 if not isinstance(d, int) else d for d in shape]:
                shapes[name] = resolved
        return shapes

    # --- model description ---
    def get_inputs(self) -> List[NodeArg]:
        return [NodeArg(n, s, t) for n, s, t, _ in self._sess.inputs()]

    def get_outputs(self) -> List[NodeArg]:
        return [NodeArg(n, s, t) for n, s, t, _ in self._sess.outputs()]

    def get_overridable_initializers(self) -> List[NodeArg]:
        return []

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._sess.metadata())

    def get_providers(self) -> List[str]:
        return [PROVIDER]

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        return {PROVIDER: {"device_name": self._sess.device_name(),
                           "validation": "1" if self._sess.validation_enabled() else "0"}}

    def get_session_options(self) -> SessionOptions:
        return self._options

    def get_device_name(self) -> str:
        """The Vulkan device this session runs on (vkgraph's addition)."""
        return self._sess.device_name()

    # --- running ---
    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping,
        run_options: Optional[RunOptions] = None,
    ) -> List[Any]:
        """Runs with one array per model input (by name) and returns the outputs named in
        ``output_names`` (all, in model order, when None or empty) as numpy arrays."""
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of names (or None), not a str")
        if output_names is not None:
            output_names = list(output_names)
            for name in output_names:
                if not isinstance(name, str):
                    raise TypeError(f"output_names holds {name!r}; names are str")
        if not isinstance(input_feed, dict):
            if not isinstance(input_feed, Mapping):
                raise TypeError("input_feed must be a dict of input name -> numpy array")
            input_feed = dict(input_feed)
        return self._sess.run(output_names, input_feed)

    def io_binding(self) -> "IOBinding":
        from .io_binding import IOBinding

        return IOBinding(self)

    def run_with_iobinding(self, iobinding: "IOBinding", run_options: Optional[RunOptions] = None) -> None:
        iobinding._run()

    # --- profiling ---
    def end_profiling(self) -> str:
        """Writes the Chrome trace (chrome://tracing, ui.perfetto.dev) of the runs since the
        session was created or profiling last ended, one slice per node with its GPU time, and
        returns its path; "" when profiling is off, as onnxruntime does."""
        if not self._sess.profiling:
            return ""
        stamp = self._profile_started.strftime("%Y-%m-%d_%H-%M-%S")
        path = f"{self._options.profile_file_prefix}_{stamp}.json"
        self._sess.write_profile(path)
        self._profile_started = datetime.datetime.now()
        return path

    # --- vkgraph's additions ---
    def validation_messages(self) -> List[str]:
        """Validation-layer messages on this session's device since the last clear (with
        ``SessionOptions.validation``); the device may be shared with other sessions."""
        return self._sess.validation_messages()

    def clear_validation_messages(self) -> None:
        self._sess.clear_validation_messages()

    def close(self) -> None:
        """Frees the session's device memory now; later calls raise vkgraph.InvalidState."""
        self._sess.close()

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
