"""What the tools that write an ONNX model node by node share (quant_dynamic_bert.py,
qdq_resnet_block.py): unique names, constants as initializers, and the finished model, checked
by ONNX's checker. Each tool adds its own node() and layers on top."""
import onnx
from onnx import helper, numpy_helper


class GraphBuilder:
    def __init__(self):
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, base, array):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(array, n))
        return n

    def model(self, graph_name, inputs, outputs, opset, ir_version=None):
        """The graph of every node added so far as a checked ModelProto of the default domain's
        `opset`; `inputs` and `outputs` are ValueInfoProtos."""
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        if ir_version is not None:
            model.ir_version = ir_version
        onnx.checker.check_model(model)
        return model
