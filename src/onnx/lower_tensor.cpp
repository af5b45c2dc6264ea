// Shape and data-movement ONNX ops. Reshape-like ops are free views of the same bytes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/shape_rules.h"
#include "onnx/fuse.h"
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"
#include "vkgraph/shaders/gather.h"
#include "vkgraph/shaders/pad.h"
#include "vkgraph/shaders/resize_linear.h"
#include "vkgraph/shaders/resize_nearest.h"
#include "vkgraph/shaders/strided_copy.h"
#include "vkgraph/shaders/where.h"

namespace vkgraph::onnx_import {
namespace {

std::vector<int64_t> int_list(const Importer& im, const onnx::NodeProto& node, size_t input,
                              const fold::Attrs& attrs, const char* attr) {
  if (im.has_input(node, input)) {
    const HostTensor& t = im.host_value(node, input, attr);
    std::vector<int64_t> v(t.numel());
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.as_int(i);
    return v;
  }
  if (const auto* l = attrs.find_ints(attr)) return *l;
  return {};
}

Value view(Importer& im, const onnx::NodeProto& node, Shape shape) {
  TensorRef src = im.tensor(node, 0);
  return Importer::device_value(im.graph(), im.graph().add_view(src, std::move(shape)));
}

std::vector<Value> lower_reshape(Importer& im, const onnx::NodeProto& node,
                                 const fold::Attrs& attrs) {
  im.require_inputs(node, 2, 2);
  const Shape& in = im.input(node, 0).shape;
  std::vector<int64_t> spec = int_list(im, node, 1, attrs, "shape");
  bool allowzero = attrs.get_int("allowzero", 0) != 0;
  Shape out;
  try {
    out = shapes::resolve_reshape(in, spec, allowzero, "Reshape");
  } catch (const Error& e) {
    throw Error(e.kind(), im.where(node) + ": " + e.message());
  }
  return {view(im, node, out)};
}

std::vector<Value> lower_flatten(Importer& im, const onnx::NodeProto& node,
                                 const fold::Attrs& attrs) {
  im.require_inputs(node, 1, 1);
  const Shape& in = im.input(node, 0).shape;
  int64_t axis = attrs.get_int("axis", 1);
  int64_t rank = static_cast<int64_t>(in.size());
  if (axis < -rank || axis > rank) im.fail(node, "axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[i];
  return {view(im, node, {outer, inner})};
}

std::vector<Value> lower_squeeze(Importer& im, const onnx::NodeProto& node,
                                 const fold::Attrs& attrs) {
  im.require_inputs(node, 1, 2);
  const Shape& in = im.input(node, 0).shape;
  std::vector<int64_t> axes = int_list(im, node, 1, attrs, "axes");
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) im.fail(node, "axis " + std::to_string(a) + " out of range");
    if (a < 0) a += rank;
    if (in[a] != 1)
      im.fail(node, "cannot squeeze dimension " + std::to_string(a) + " of " + shape_str(in));
    drop[a] = true;
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!(axes.empty() ? in[i] == 1 : drop[i])) out.push_back(in[i]);
  return {view(im, node, out)};
}

std::vector<Value> lower_unsqueeze(Importer& im, const onnx::NodeProto& node,
                                   const fold::Attrs& attrs) {
  im.require_inputs(node, 1, 2);
  const Shape& in = im.input(node, 0).shape;
  std::vector<int64_t> axes = int_list(im, node, 1, attrs, "axes");
  int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> added(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) im.fail(node, "axis " + std::to_string(a) + " out of range");
    if (a < 0) a += rank;
    if (added[a]) im.fail(node, "repeated axis " + std::to_string(a));
    added[a] = true;
  }
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(added[i] ? 1 : in[next++]);
  return {view(im, node, out)};
}

Value out(Importer& im, TensorRef t) {
  return Importer::device_value(im.graph(), t);
}

// A Transpose that only MatMuls read is elided by the fusion pass (fuse.h), which also
// composes chains; what reaches here is copied.
std::vector<Value> lower_transpose(Importer& im, const onnx::NodeProto& node,
                                   const fold::Attrs& a) {
  im.require_inputs(node, 1, 1);
  const std::vector<int64_t> perm =
      ops::resolve_perm(im.input(node, 0).shape, int_list(im, node, 99, a, "perm"), im.where(node));
  return {out(im, ops::transpose(im.graph(), im.tensor(node, 0), perm))};
}

std::vector<Value> lower_concat(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 1u << 16);
  std::vector<TensorRef> inputs;
  for (size_t i = 0; i < im.num_inputs(node); ++i) inputs.push_back(im.tensor(node, i));
  return {out(im, ops::concat(im.graph(), inputs, a.get_int("axis", 0)))};
}

// ViewConcat (fuse_view.h): the inputs read through the views the pass wrote.
std::vector<Value> lower_view_concat(Importer& im, const onnx::NodeProto& node,
                                     const fold::Attrs& a) {
  im.require_inputs(node, 1, 1u << 16);
  std::vector<ops::StridedView> parts;
  for (int i = 0; i < node.input_size(); ++i)
    parts.push_back(fused_view(im, node, a, i, "x" + std::to_string(i)));
  return {out(im, ops::concat_views(im.graph(), parts, a.get_int("axis", 0)))};
}

std::vector<Value> lower_split(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 2);
  const Shape& x = im.input(node, 0).shape;
  int64_t axis = a.get_int("axis", 0), rank = static_cast<int64_t>(x.size());
  if (axis < -rank || axis >= rank) im.fail(node, "axis out of range");
  if (axis < 0) axis += rank;
  std::vector<int64_t> sizes = int_list(im, node, 1, a, "split");
  int64_t parts = sizes.empty() ? a.get_int("num_outputs", node.output_size()) : 0;
  if (sizes.empty()) {
    if (parts <= 0 || parts != node.output_size())
      im.fail(node, "cannot split into " + std::to_string(parts) + " parts for " +
                        std::to_string(node.output_size()) + " outputs");
    sizes = shapes::split_evenly(x[axis], parts);
  }
  std::vector<Value> values;
  for (TensorRef t : ops::split(im.graph(), im.tensor(node, 0), axis, sizes))
    values.push_back(out(im, t));
  return values;
}

std::vector<Value> lower_slice(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 5);
  std::vector<int64_t> starts, ends, axes, steps;
  if (im.opset() < 10) {
    starts = int_list(im, node, 99, a, "starts");
    ends = int_list(im, node, 99, a, "ends");
    axes = int_list(im, node, 99, a, "axes");
  } else {
    im.require_host_values(node, {1, 2, 3, 4});
    starts = int_list(im, node, 1, a, "starts");
    ends = int_list(im, node, 2, a, "ends");
    axes = int_list(im, node, 3, a, "axes");
    steps = int_list(im, node, 4, a, "steps");
  }
  return {out(im, ops::slice(im.graph(), im.tensor(node, 0), starts, ends, axes, steps))};
}

std::vector<Value> lower_gather(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  bool elements = node.op_type() == "GatherElements";
  TensorRef data = im.tensor(node, 0), idx = im.tensor(node, 1);
  int64_t axis = a.get_int("axis", 0);
  return {out(im, elements ? ops::gather_elements(im.graph(), data, idx, axis)
                           : ops::gather(im.graph(), data, idx, axis))};
}

std::vector<Value> lower_scatter(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 3, 3);
  std::string r = "none";
  if (auto it = a.strings.find("reduction"); it != a.strings.end()) r = it->second;
  static const std::map<std::string, ops::ScatterReduction> kinds = {
      {"none", ops::ScatterReduction::None},
      {"add", ops::ScatterReduction::Add},
      {"mul", ops::ScatterReduction::Mul},
      {"max", ops::ScatterReduction::Max},
      {"min", ops::ScatterReduction::Min}};
  if (!kinds.count(r)) im.fail(node, "unsupported reduction '" + r + "'");
  return {out(im, ops::scatter_elements(im.graph(), im.tensor(node, 0), im.tensor(node, 1),
                                        im.tensor(node, 2), a.get_int("axis", 0), kinds.at(r)))};
}

std::vector<Value> lower_expand(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  return {out(im, ops::expand(im.graph(), im.tensor(node, 0), int_list(im, node, 1, a, "shape")))};
}

std::vector<Value> lower_tile(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  return {out(im, ops::tile(im.graph(), im.tensor(node, 0), int_list(im, node, 1, a, "repeats")))};
}

std::vector<Value> lower_pad(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 4);
  std::string mode = "constant";
  if (auto it = a.strings.find("mode"); it != a.strings.end()) mode = it->second;
  static const std::map<std::string, ops::PadMode> modes = {{"constant", ops::PadMode::Constant},
                                                            {"reflect", ops::PadMode::Reflect},
                                                            {"edge", ops::PadMode::Edge},
                                                            {"wrap", ops::PadMode::Wrap}};
  if (!modes.count(mode)) im.fail(node, "unsupported mode '" + mode + "'");
  if (im.opset() >= 11) im.require_host_values(node, {1, 2, 3});
  std::vector<int64_t> pads = int_list(im, node, im.opset() < 11 ? 99 : 1, a, "pads");
  double value = 0;
  if (im.opset() < 11) {
    auto it = a.floats.find("value");
    if (it != a.floats.end()) value = it->second;
  } else if (im.has_input(node, 2)) {
    const HostTensor& v = im.host_value(node, 2, "constant_value");
    if (v.numel() > 0) value = v.as_double(0);
  }
  std::vector<int64_t> axes = int_list(im, node, 3, a, "axes");
  return {out(im, ops::pad(im.graph(), im.tensor(node, 0), pads, modes.at(mode), value, axes))};
}

Lowering compare_lowering(ops::CompareOp op) {
  return [op](Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
    im.require_inputs(node, 2, 2);
    return std::vector<Value>{
        out(im, ops::compare(im.graph(), op, im.tensor(node, 0), im.tensor(node, 1)))};
  };
}

Lowering logical_lowering(ops::LogicalOp op) {
  return [op](Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
    im.require_inputs(node, 2, 2);
    return std::vector<Value>{
        out(im, ops::logical(im.graph(), op, im.tensor(node, 0), im.tensor(node, 1)))};
  };
}

std::vector<Value> lower_where(Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
  im.require_inputs(node, 3, 3);
  return {
      out(im, ops::where(im.graph(), im.tensor(node, 0), im.tensor(node, 1), im.tensor(node, 2)))};
}

std::vector<Value> lower_not(Importer& im, const onnx::NodeProto& node, const fold::Attrs&) {
  im.require_inputs(node, 1, 1);
  return {out(im, ops::logical_not(im.graph(), im.tensor(node, 0)))};
}

std::vector<Value> lower_cast(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 2);
  DType to;
  std::optional<DType> int8_type;  // quantization ops read a cast to int8/uint8 as such
  bool to_bfloat16 = false;        // held in float32, rounded to bfloat16's precision
  if (node.op_type() == "CastLike") {
    to = im.input(node, 1).dtype;
    int8_type = im.input(node, 1).int8_type;
    to_bfloat16 = im.declared_elem_type(node.input(1)) == onnx::TensorProto::BFLOAT16;
  } else {
    auto it = a.ints.find("to");
    if (it == a.ints.end()) im.fail(node, "missing attribute 'to'");
    to = onnx_io::dtype_from_onnx(static_cast<int32_t>(it->second));
    int8_type = int8_type_of(static_cast<int32_t>(it->second));
    to_bfloat16 = it->second == onnx::TensorProto::BFLOAT16;
  }
  Value v = to == im.input(node, 0).dtype ? im.input(node, 0)
                                          : out(im, ops::cast(im.graph(), im.tensor(node, 0), to));
  if (to_bfloat16) v = out(im, ops::to_bfloat16(im.graph(), im.tensor(v, node.output(0))));
  v.int8_type = int8_type;
  return {v};
}

std::vector<Value> lower_cumsum(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  const HostTensor& axis = im.host_value(node, 1, "axis");
  if (axis.numel() != 1) im.fail(node, "axis must be a scalar");
  return {out(im, ops::cumsum(im.graph(), im.tensor(node, 0), axis.as_int(0),
                              a.get_int("exclusive", 0) != 0, a.get_int("reverse", 0) != 0))};
}

std::vector<Value> lower_topk(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 2);
  int64_t k;
  if (im.opset() < 10) {
    k = a.get_int("k", -1);
  } else {
    const HostTensor& kt = im.host_value(node, 1, "K");
    if (kt.numel() != 1) im.fail(node, "K must be a scalar");
    k = kt.as_int(0);
  }
  if (a.get_int("sorted", 1) == 0) im.fail(node, "sorted=0 is not supported");
  auto r = ops::topk(im.graph(), im.tensor(node, 0), k, a.get_int("axis", -1),
                     a.get_int("largest", 1) != 0);
  return {out(im, r.values), out(im, r.indices)};
}

std::vector<Value> lower_resize(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 4);
  const Shape& x = im.input(node, 0).shape;
  ops::ResizeOptions o;
  std::string mode = "nearest";
  if (auto it = a.strings.find("mode"); it != a.strings.end()) mode = it->second;
  if (mode == "linear" || mode == "bilinear")
    o.mode = ops::ResizeMode::Linear;
  else if (mode == "cubic")
    o.mode = ops::ResizeMode::Cubic;
  else if (mode != "nearest")
    im.fail(node, "unsupported mode '" + mode + "'");
  std::string ctm = "half_pixel";
  if (auto it = a.strings.find("coordinate_transformation_mode"); it != a.strings.end())
    ctm = it->second;
  // Upsample and Resize-10 map coordinates asymmetrically and take the floor for nearest.
  if (im.opset() < 11) ctm = "asymmetric";
  static const std::map<std::string, ops::ResizeCoordinates> ctms = {
      {"half_pixel", ops::ResizeCoordinates::HalfPixel},
      {"asymmetric", ops::ResizeCoordinates::Asymmetric},
      {"align_corners", ops::ResizeCoordinates::AlignCorners},
      {"pytorch_half_pixel", ops::ResizeCoordinates::PytorchHalfPixel},
      {"tf_half_pixel_for_nn", ops::ResizeCoordinates::TfHalfPixelForNn},
      {"tf_crop_and_resize", ops::ResizeCoordinates::TfCropAndResize}};
  if (!ctms.count(ctm)) im.fail(node, "unsupported coordinate_transformation_mode '" + ctm + "'");
  o.coordinates = ctms.at(ctm);
  std::string nm = im.opset() < 11 ? "floor" : "round_prefer_floor";
  if (auto it = a.strings.find("nearest_mode"); it != a.strings.end()) nm = it->second;
  static const std::map<std::string, ops::ResizeNearest> nms = {
      {"round_prefer_floor", ops::ResizeNearest::RoundPreferFloor},
      {"round_prefer_ceil", ops::ResizeNearest::RoundPreferCeil},
      {"floor", ops::ResizeNearest::Floor},
      {"ceil", ops::ResizeNearest::Ceil}};
  if (!nms.count(nm)) im.fail(node, "unsupported nearest_mode '" + nm + "'");
  o.nearest = nms.at(nm);
  if (auto it = a.floats.find("cubic_coeff_a"); it != a.floats.end()) o.cubic_coeff_a = it->second;
  o.exclude_outside = a.get_int("exclude_outside", 0) != 0;
  if (a.find_ints("axes")) im.fail(node, "attribute axes is not supported");
  // Inputs: opset 10 (X, scales); 11+ (X, roi, scales, sizes); Upsample-7 has an attribute.
  size_t scales_at = im.opset() < 11 ? 1 : 2, sizes_at = 3, roi_at = 1;
  Shape out_shape = x;
  const bool crop = o.coordinates == ops::ResizeCoordinates::TfCropAndResize;
  if (crop)
    im.require_host_values(node, {roi_at, scales_at, sizes_at});
  else
    im.require_host_values(node, {scales_at, sizes_at});
  // tf_crop_and_resize: roi is [starts..., ends...] over every axis, of which vkgraph resizes H
  // and W; N and C must keep their whole extent.
  std::vector<double> roi_start(x.size(), 0.0), roi_end(x.size(), 1.0);
  if (crop) {
    if (!im.has_input(node, roi_at)) im.fail(node, "tf_crop_and_resize needs roi");
    const HostTensor& roi = im.host_value(node, roi_at, "roi");
    if (roi.numel() != 2 * static_cast<int64_t>(x.size()))
      im.fail(node, "roi has " + std::to_string(roi.numel()) + " values for a rank-" +
                        std::to_string(x.size()) + " input; it needs " +
                        std::to_string(2 * x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      roi_start[i] = roi.as_double(i);
      roi_end[i] = roi.as_double(x.size() + i);
    }
    for (size_t i = 0; i < std::min<size_t>(2, x.size()); ++i)
      if (roi_start[i] != 0.0 || roi_end[i] != 1.0)
        im.fail(node, "tf_crop_and_resize with a roi on axis " + std::to_string(i) +
                          " (only H and W are resized)");
    if (x.size() == 4) {
      o.roi = {static_cast<float>(roi_start[2]), static_cast<float>(roi_start[3]),
               static_cast<float>(roi_end[2]), static_cast<float>(roi_end[3])};
      for (float r : o.roi)
        if (!std::isfinite(r)) im.fail(node, "roi holds a value that is not finite");
    }
  }
  // Used by tf_crop_and_resize only; ONNX allows it with any mode.
  if (auto it = a.floats.find("extrapolation_value"); it != a.floats.end())
    o.extrapolation_value = it->second;
  const HostTensor* sizes =
      im.has_input(node, sizes_at) ? &im.host_value(node, sizes_at, "sizes") : nullptr;
  const HostTensor* scales =
      im.has_input(node, scales_at) ? &im.host_value(node, scales_at, "scales") : nullptr;
  std::optional<HostTensor> scale_attr;
  if (auto it = a.float_lists.find("scales"); it != a.float_lists.end()) {
    scale_attr =
        HostTensor::from(DType::Float32, {static_cast<int64_t>(it->second.size())}, it->second);
    scales = &*scale_attr;
  }
  if (sizes && sizes->numel() > 0) {
    if (sizes->numel() != static_cast<int64_t>(x.size()))
      im.fail(node, "sizes rank differs from input");
    for (size_t i = 0; i < x.size(); ++i) out_shape[i] = sizes->as_int(i);
  } else if (scales && scales->numel() > 0) {
    if (scales->numel() != static_cast<int64_t>(x.size()))
      im.fail(node, "scales rank differs from input");
    for (size_t i = 0; i < x.size(); ++i) {
      const double scale = scales->as_double(i);
      // tf_crop_and_resize scales the region: floor(in * (end - start) * scale).
      const double dim =
          std::floor(static_cast<double>(x[i]) * (roi_end[i] - roi_start[i]) * scale);
      // Written to reject NaN too: converting an out-of-range double to an int64 dim or a
      // float scale is undefined behaviour.
      if (!(scale > 0 && scale <= std::numeric_limits<float>::max() &&
            dim <= static_cast<double>(int64_t{1} << 62)))
        throw Error(ErrorKind::InvalidArgument, im.where(node) + ": scale " +
                                                    std::to_string(scale) + " for axis " +
                                                    std::to_string(i) + " of " + shape_str(x));
      out_shape[i] = static_cast<int64_t>(dim);
    }
    if (x.size() == 4)
      o.scale_h = static_cast<float>(scales->as_double(2)),
      o.scale_w = static_cast<float>(scales->as_double(3));
  } else {
    im.fail(node, "needs scales or sizes");
  }
  return {out(im, ops::resize(im.graph(), im.tensor(node, 0), out_shape, o))};
}

}  // namespace

void register_tensor(LoweringTable& t) {
  t["Reshape"] = {lower_reshape, shaders::strided_copy::float16};
  t["Flatten"] = {lower_flatten, shaders::strided_copy::float16};
  t["Squeeze"] = {lower_squeeze, shaders::strided_copy::float16};
  t["Unsqueeze"] = {lower_unsqueeze, shaders::strided_copy::float16};
  t["Transpose"] = {lower_transpose, shaders::strided_copy::float16};
  t["Concat"] = {lower_concat, shaders::strided_copy::float16};
  t[fuse::fused_key("ViewConcat")] = {lower_view_concat, shaders::strided_copy::float16};
  t["Split"] = {lower_split, shaders::strided_copy::float16};
  t["Slice"] = {lower_slice, shaders::strided_copy::float16};
  t["Gather"] = {lower_gather, shaders::gather::float16};
  t["GatherElements"] = {lower_gather, shaders::gather::float16};
  t["ScatterElements"] = lower_scatter;
  t["Scatter"] = lower_scatter;
  t["Expand"] = {lower_expand, shaders::strided_copy::float16};
  t["Tile"] = {lower_tile, shaders::pad::float16};
  t["Pad"] = {lower_pad, shaders::pad::float16};
  t["Where"] = {lower_where, shaders::where::float16};
  t["Equal"] = compare_lowering(ops::CompareOp::Equal);
  t["Less"] = compare_lowering(ops::CompareOp::Less);
  t["LessOrEqual"] = compare_lowering(ops::CompareOp::LessOrEqual);
  t["Greater"] = compare_lowering(ops::CompareOp::Greater);
  t["GreaterOrEqual"] = compare_lowering(ops::CompareOp::GreaterOrEqual);
  t["And"] = logical_lowering(ops::LogicalOp::And);
  t["Or"] = logical_lowering(ops::LogicalOp::Or);
  t["Xor"] = logical_lowering(ops::LogicalOp::Xor);
  t["Not"] = lower_not;
  t["Cast"] = lower_cast;
  t["CastLike"] = lower_cast;
  t["CumSum"] = lower_cumsum;
  t["TopK"] = lower_topk;
  t["Resize"] = {lower_resize, shaders::resize_linear::float16 && shaders::resize_nearest::float16};
  t["Upsample"] = {lower_resize,
                   shaders::resize_linear::float16 && shaders::resize_nearest::float16};
}

}  // namespace vkgraph::onnx_import
