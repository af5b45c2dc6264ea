// GatherND and ScatterND (ops/nd_index.h), and Compress: a Gather of the positions its
// condition selects, which must be known at load time because they decide the output's shape
// (a condition computed from model inputs specialises the graph to their values).
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

std::vector<Value> lower_gather_nd(Importer& im, const onnx::NodeProto& node,
                                   const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  return with_node(im, node, [&] {
    return std::vector<Value>{
        device(im, ops::gather_nd(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                                  a.get_int("batch_dims", 0)))};
  });
}

std::vector<Value> lower_scatter_nd(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  im.require_inputs(node, 3, 3);
  auto it = a.strings.find("reduction");
  const std::string name = it == a.strings.end() ? "none" : it->second;
  ops::ScatterReduction r;
  if (name == "none")
    r = ops::ScatterReduction::None;
  else if (name == "add")
    r = ops::ScatterReduction::Add;
  else if (name == "mul")
    r = ops::ScatterReduction::Mul;
  else if (name == "max")
    r = ops::ScatterReduction::Max;
  else if (name == "min")
    r = ops::ScatterReduction::Min;
  else
    im.fail(node, "unknown reduction '" + name + "'");
  return with_node(im, node, [&] {
    return std::vector<Value>{
        device(im, ops::scatter_nd(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                                   im.tensor(node, 2), r))};
  });
}

std::vector<Value> lower_compress(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  const HostTensor& condition = im.host_value(node, 1, "condition");
  if (condition.shape.size() != 1) im.fail(node, "condition must be 1-D");
  const Shape& shape = im.input(node, 0).shape;
  const bool has_axis = a.ints.count("axis") > 0;
  int64_t axis = has_axis ? a.ints.at("axis") : 0;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (has_axis && (axis < -rank || axis >= rank))
    throw Error(ErrorKind::InvalidArgument,
                im.where(node) + ": axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += rank;
  const int64_t length = has_axis ? shape[axis] : numel(shape);
  if (condition.numel() > length)
    throw Error(ErrorKind::InvalidArgument,
                im.where(node) + ": condition has " + std::to_string(condition.numel()) +
                    " entries for an axis of " + std::to_string(length));
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < condition.numel(); ++i)
    if (condition.as_int(i) != 0) selected.push_back(i);
  return with_node(im, node, [&] {
    ComputeGraph& g = im.graph();
    TensorRef x = im.tensor(node, 0);
    if (!has_axis) x = g.add_view(x, {length});
    TensorRef positions = g.add_constant(
        HostTensor::from(DType::Int64, {static_cast<int64_t>(selected.size())}, selected));
    return std::vector<Value>{device(im, ops::gather(g, x, positions, axis))};
  });
}

}  // namespace

void register_nd_index(LoweringTable& t) {
  t["GatherND"] = lower_gather_nd;
  t["ScatterND"] = lower_scatter_nd;
  t["Compress"] = lower_compress;
}

}  // namespace vkgraph::onnx_import
