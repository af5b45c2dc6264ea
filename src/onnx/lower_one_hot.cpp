// OneHot and Hardmax (ops/one_hot.h), and EyeLike, whose result depends only on its input's
// shape and so is a constant made at load time.
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::onnx_import {
namespace {

std::vector<Value> lower_one_hot(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 3, 3);
  const HostTensor& depth_value = im.host_value(node, 1, "depth");
  if (depth_value.numel() != 1) im.fail(node, "depth must hold one value");
  const double depth = depth_value.as_double(0);
  if (!(depth >= 1 && depth < 2147483648.0))
    throw Error(ErrorKind::InvalidArgument,
                im.where(node) + ": depth " + std::to_string(depth) + " out of range");
  return with_node(im, node, [&] {
    TensorRef indices = im.tensor(node, 0);
    const DType idx = im.graph().info(indices).dtype;
    if (idx != DType::Int32 && idx != DType::Int64)
      indices = ops::cast(im.graph(), indices, DType::Int64);  // ONNX casts any numeric type
    return std::vector<Value>{
        device(im, ops::one_hot(im.graph(), indices, static_cast<int64_t>(depth),
                                im.tensor(node, 2), a.get_int("axis", -1)))};
  });
}

// Before opset 13 Hardmax flattens the input to 2-D at `axis` and works on whole rows.
std::vector<Value> lower_hardmax(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  return with_node(im, node, [&] {
    ComputeGraph& g = im.graph();
    TensorRef x = im.tensor(node, 0);
    if (im.opset() >= 13)
      return std::vector<Value>{device(im, ops::hardmax(g, x, a.get_int("axis", -1)))};
    const Shape shape = g.info(x).shape;
    const int axis = static_cast<int>(a.get_int("axis", 1) < 0 ? a.get_int("axis", 1) + shape.size()
                                                               : a.get_int("axis", 1));
    if (axis < 0 || axis > static_cast<int>(shape.size())) im.fail(node, "axis out of range");
    const int64_t rows = numel(Shape(shape.begin(), shape.begin() + axis));
    const int64_t cols = numel(Shape(shape.begin() + axis, shape.end()));
    TensorRef y = ops::hardmax(g, g.add_view(x, {rows, cols}), 1);
    return std::vector<Value>{device(im, g.add_view(y, shape))};
  });
}

std::vector<Value> lower_eye_like(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  const Value& in = im.input(node, 0);
  if (in.shape.size() != 2) im.fail(node, "input must be 2-D, got " + shape_str(in.shape));
  DType dtype = in.dtype;
  if (a.ints.count("dtype")) dtype = onnx_io::dtype_from_onnx(static_cast<int>(a.ints.at("dtype")));
  const int64_t k = a.get_int("k", 0);
  HostTensor eye(dtype, in.shape);
  for (int64_t r = 0; r < in.shape[0]; ++r) {
    const int64_t c = r + k;
    if (c >= 0 && c < in.shape[1]) eye.set(r * in.shape[1] + c, 1.0);
  }
  Value v;
  v.shape = eye.shape;
  v.dtype = dtype;
  v.constant = std::move(eye);
  return {v};
}

}  // namespace

void register_one_hot(LoweringTable& t) {
  t["OneHot"] = lower_one_hot;
  t["Hardmax"] = lower_hardmax;
  t["EyeLike"] = lower_eye_like;
}

}  // namespace vkgraph::onnx_import
