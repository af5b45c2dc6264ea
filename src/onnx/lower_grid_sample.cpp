// GridSample and RoiAlign (ops/grid_sample.h, ops/roi_align.h), and MaxUnpool, composed at load
// time as ONNX defines it: a zero tensor of the pooling input's size into which a ScatterElements
// puts each input value at its MaxPool index (flat over that whole tensor, as MaxPool writes them).
#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

std::string string_attr(const fold::Attrs& a, const char* name, const char* fallback) {
  auto it = a.strings.find(name);
  return it == a.strings.end() ? fallback : it->second;
}

std::vector<Value> lower_grid_sample(Importer& im, const onnx::NodeProto& node,
                                     const fold::Attrs& a) {
  im.require_inputs(node, 2, 2);
  ops::GridSampleOptions o;
  const std::string mode = string_attr(a, "mode", "bilinear");
  if (mode == "bilinear" || mode == "linear")
    o.mode = ops::GridSampleMode::Bilinear;
  else if (mode == "nearest")
    o.mode = ops::GridSampleMode::Nearest;
  else if (mode == "bicubic" || mode == "cubic")
    o.mode = ops::GridSampleMode::Bicubic;
  else
    im.fail(node, "unknown mode '" + mode + "'");
  const std::string padding = string_attr(a, "padding_mode", "zeros");
  if (padding == "zeros")
    o.padding = ops::GridSamplePadding::Zeros;
  else if (padding == "border")
    o.padding = ops::GridSamplePadding::Border;
  else if (padding == "reflection")
    o.padding = ops::GridSamplePadding::Reflection;
  else
    im.fail(node, "unknown padding_mode '" + padding + "'");
  o.align_corners = a.get_int("align_corners", 0) != 0;
  return with_node(im, node, [&] {
    return std::vector<Value>{
        device(im, ops::grid_sample(im.graph(), im.tensor(node, 0), im.tensor(node, 1), o))};
  });
}

std::vector<Value> lower_max_unpool(Importer& im, const onnx::NodeProto& node,
                                    const fold::Attrs& a) {
  im.require_inputs(node, 2, 3);
  const Shape x = im.input(node, 0).shape;
  if (x.size() < 3) im.fail(node, "input " + shape_str(x) + " needs [N, C, spatial...]");
  const size_t dims = x.size() - 2;
  const auto* kernel = a.find_ints("kernel_shape");
  if (!kernel || kernel->size() != dims) im.fail(node, "kernel_shape must give every spatial dim");
  std::vector<int64_t> strides(dims, 1), pads(2 * dims, 0);
  if (const auto* s = a.find_ints("strides")) strides = *s;
  if (const auto* p = a.find_ints("pads")) pads = *p;
  if (strides.size() != dims || pads.size() != 2 * dims)
    im.fail(node, "strides/pads do not match the input's rank");
  // Indices address the pooling input, whose shape follows from the attributes; an
  // output_shape beyond it (the padding the pool dropped) extends it with zeros at the end.
  Shape pooled = x, out = x;
  for (size_t i = 0; i < dims; ++i)
    pooled[2 + i] = (x[2 + i] - 1) * strides[i] + (*kernel)[i] - pads[i] - pads[dims + i];
  out = pooled;
  if (im.has_input(node, 2)) {
    const HostTensor& shape = im.host_value(node, 2, "output_shape");
    if (shape.numel() != static_cast<int64_t>(x.size()))
      im.fail(node, "output_shape must give all " + std::to_string(x.size()) + " dims");
    for (size_t i = 0; i < x.size(); ++i) out[i] = shape.as_int(i);
    if (out[0] != x[0] || out[1] != x[1]) im.fail(node, "output_shape changes N or C");
    for (size_t i = 2; i < x.size(); ++i)
      if (out[i] < pooled[i])
        im.fail(node, "output_shape " + shape_str(out) + " is smaller than the pooled input " +
                          shape_str(pooled));
  }
  if (im.input(node, 1).shape != x) im.fail(node, "indices must have the input's shape");
  return with_node(im, node, [&] {
    ComputeGraph& g = im.graph();
    const int64_t total = numel(pooled), count = numel(x);
    const DType dtype = im.input(node, 0).dtype;
    TensorRef zeros = g.add_constant(HostTensor(dtype, {total}));
    TensorRef values = g.add_view(im.tensor(node, 0), {count});
    TensorRef indices = g.add_view(im.tensor(node, 1), {count});
    TensorRef y = g.add_view(ops::scatter_elements(g, zeros, indices, values, 0), pooled);
    if (out != pooled) {
      std::vector<int64_t> widen(2 * x.size(), 0);
      for (size_t i = 0; i < x.size(); ++i) widen[x.size() + i] = out[i] - pooled[i];
      y = ops::pad(g, y, widen);
    }
    return std::vector<Value>{device(im, y)};
  });
}

std::vector<Value> lower_roi_align(Importer& im, const onnx::NodeProto& node,
                                   const fold::Attrs& a) {
  im.require_inputs(node, 3, 3);
  ops::RoiAlignOptions o;
  o.output_height = a.get_int("output_height", 1);
  o.output_width = a.get_int("output_width", 1);
  o.sampling_ratio = a.get_int("sampling_ratio", 0);
  if (auto it = a.floats.find("spatial_scale"); it != a.floats.end()) o.spatial_scale = it->second;
  const std::string mode = string_attr(a, "mode", "avg");
  if (mode != "avg" && mode != "max") im.fail(node, "unknown mode '" + mode + "'");
  o.max = mode == "max";
  // Opset 10 had no attribute and behaved as output_half_pixel.
  const std::string ctm = string_attr(a, "coordinate_transformation_mode",
                                      im.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    im.fail(node, "unknown coordinate_transformation_mode '" + ctm + "'");
  o.half_pixel = ctm == "half_pixel";
  return with_node(im, node, [&] {
    return std::vector<Value>{device(
        im,
        ops::roi_align(im.graph(), im.tensor(node, 0), im.tensor(node, 1), im.tensor(node, 2), o))};
  });
}

}  // namespace

void register_grid_sample(LoweringTable& t) {
  t["RoiAlign"] = lower_roi_align;
  t["GridSample"] = lower_grid_sample;
  t["MaxUnpool"] = lower_max_unpool;
}

}  // namespace vkgraph::onnx_import
