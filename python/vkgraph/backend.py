"""vkgraph as an ONNX backend (onnx.backend.base.Backend).

    import vkgraph.backend
    rep = vkgraph.backend.prepare(model)       # a ModelProto (or its bytes)
    outputs = rep.run([x])                     # positional, or {"name": x}

so ONNX's own test runner, onnx.backend.test.BackendTest, runs against vkgraph
(python/tests/test_onnx_backend.py). ONNX names devices "CPU" and "CUDA"; vkgraph runs on a
Vulkan device, chosen as SessionOptions.device / VKGRAPH_DEVICE choose it, and answers to "CPU"
as the one device name the runner asks about.
"""

from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from .session import InferenceSession, SessionOptions


def _options(kwargs: Dict[str, Any]) -> SessionOptions:
    options = kwargs.pop("sess_options", None) or SessionOptions()
    for key in list(kwargs):
        if key in SessionOptions.__slots__ and not key.startswith("_"):
            setattr(options, key, kwargs.pop(key))
    return options


class VkgraphRep(BackendRep):
    """A prepared model: one InferenceSession."""

    def __init__(self, session: InferenceSession) -> None:
        super().__init__()
        self.session = session
        self._input_names = [i.name for i in session.get_inputs()]
        self._output_names = [o.name for o in session.get_outputs()]

    def run(self, inputs: Any, **kwargs: Any) -> Tuple[Any, ...]:
        if isinstance(inputs, dict):
            feed = inputs
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            if len(inputs) > len(self._input_names):
                raise ValueError(
                    f"{len(inputs)} inputs given; the model takes {len(self._input_names)}")
            feed = dict(zip(self._input_names, inputs))
        outputs = self.session.run(None, feed)
        return namedtupledict("Outputs", self._output_names)(*outputs)


class VkgraphBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        # Whether vkgraph supports every op is known only by building it: prepare() raises
        # vkgraph.Unsupported naming what is missing.
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"

    @classmethod
    def prepare(
        cls, model: Union[onnx.ModelProto, bytes], device: str = "CPU", **kwargs: Any
    ) -> VkgraphRep:
        options = _options(dict(kwargs))
        data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
        return VkgraphRep(InferenceSession(data, options))

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> Tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Sequence[np.ndarray],
        device: str = "CPU",
        outputs_info: Optional[Sequence[Tuple[np.dtype, Tuple[int, ...]]]] = None,
        **kwargs: Any,
    ) -> Tuple[Any, ...]:
        """Runs one node as a model of its own: inputs typed from the arrays given, outputs
        from `outputs_info` where given, else from ONNX's shape inference."""
        from onnx import helper, mapping

        names = [n for n in node.input if n]
        graph_inputs = [
            helper.make_tensor_value_info(n, mapping.NP_TYPE_TO_TENSOR_TYPE[np.asarray(x).dtype],
                                          np.asarray(x).shape)
            for n, x in zip(names, inputs)
        ]
        graph_outputs = []
        for i, n in enumerate(node.output):
            if outputs_info is not None and i < len(outputs_info):
                dtype, shape = outputs_info[i]
                graph_outputs.append(helper.make_tensor_value_info(
                    n, mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)], shape))
            else:
                graph_outputs.append(helper.make_empty_tensor_value_info(n))
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        model = helper.make_model(
            helper.make_graph([node], "run_node", graph_inputs, graph_outputs),
            opset_imports=[helper.make_opsetid(node.domain or "", opset)])
        inferred = onnx.shape_inference.infer_shapes(model)
        for out in model.graph.output:
            if not out.type.HasField("tensor_type"):
                for v in inferred.graph.value_info:
                    if v.name == out.name:
                        out.type.CopyFrom(v.type)
        return cls.prepare(model, device, **kwargs).run(
            {n: np.asarray(x) for n, x in zip(names, inputs)})


prepare = VkgraphBackend.prepare
run_model = VkgraphBackend.run_model
run_node = VkgraphBackend.run_node
supports_device = VkgraphBackend.supports_device
is_compatible = VkgraphBackend.is_compatible
