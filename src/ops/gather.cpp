// Gather, GatherElements and ScatterElements. Index tensors may be Int32 or Int64; the shaders
// read Int64 as word pairs, so only the scatter reductions on Int64 data need shaderInt64.
#include "vkgraph/shaders/gather.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"
#include "vkgraph/shaders/scatter.h"

namespace vkgraph::ops {
namespace {

// Catches bad constant indices at build time; computed ones are bounds-checked in the shader.
void check_constant_indices(ComputeGraph& g, TensorRef indices, int64_t dim,
                            const std::string& op) {
  const HostTensor* v = g.constant_value(indices);
  if (!v) return;
  for (int64_t i = 0; i < v->numel(); ++i) {
    int64_t k = v->as_int(i);
    if (k < -dim || k >= dim)
      throw Error(ErrorKind::InvalidArgument, op + ": index " + std::to_string(k) +
                                                  " out of range for axis of size " +
                                                  std::to_string(dim));
  }
}

uint32_t wide_indices(ComputeGraph& g, TensorRef indices) {
  return g.info(indices).dtype == DType::Int64 ? 1u : 0u;
}

// GatherElements and ScatterElements: indices have data's rank and fit inside it off the axis.
int check_elementwise_indices(const TensorInfo& data, const TensorInfo& indices, int64_t axis,
                              const std::string& op, bool check_rank = true) {
  if (data.shape.empty()) throw Error(ErrorKind::InvalidArgument, op + ": data is a scalar");
  int a = normalize_axis(axis, data.shape.size(), op);
  bool valid = indices.shape.size() == data.shape.size();
  for (size_t d = 0; valid && d < data.shape.size(); ++d)
    valid = static_cast<int>(d) == a || indices.shape[d] <= data.shape[d];
  if (!valid)
    throw Error(ErrorKind::InvalidArgument, op + ": indices " + shape_str(indices.shape) +
                                                " do not fit data " + shape_str(data.shape) +
                                                " off axis " + std::to_string(a));
  if (check_rank && data.shape.size() > static_cast<size_t>(kMaxRank))
    throw Error(ErrorKind::Unsupported, op + ": rank " + std::to_string(data.shape.size()) +
                                            " above " + std::to_string(kMaxRank));
  return a;
}

std::vector<uint8_t> elementwise_push(int64_t n, const TensorInfo& data, const TensorInfo& indices,
                                      int a, const std::string& op) {
  std::vector<int64_t> strides = shapes::contiguous_strides(data.shape);
  std::vector<int32_t> data_stride;
  for (int64_t s : strides) data_stride.push_back(checked_i32(s, op, "stride"));
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(static_cast<int32_t>(data.shape.size()));
  pc.add(static_cast<int32_t>(a)).add(checked_i32(data.shape[a], op, "dim"));
  pc.add_array(to_i32(indices.shape, op), kMaxRank);
  pc.add_array(data_stride, kMaxRank);
  return pc.take();
}

// GatherElements reads element (i with i[axis] replaced by its index) of data: adjacent dims
// off the axis whose inner one indices and data share merge into one without changing any
// offset, and dims of 1 in both drop. So ranks above kMaxRank run when such dims exist
// (exporters' NLL over [N, C, d1..d5], for one).
void merge_dims_off_axis(Shape& data, Shape& indices, int& axis) {
  for (size_t d = 0; d + 1 < data.size() && data.size() > static_cast<size_t>(kMaxRank);) {
    const int di = static_cast<int>(d);
    const bool ones = data[d] == 1 && indices[d] == 1 && di != axis;
    const bool mergeable = di != axis && di + 1 != axis && indices[d + 1] == data[d + 1];
    if (!ones && !mergeable) {
      ++d;
      continue;
    }
    if (mergeable) {
      data[d + 1] *= data[d];
      indices[d + 1] *= indices[d];
    }
    data.erase(data.begin() + di);
    indices.erase(indices.begin() + di);
    if (axis > di) --axis;
  }
}

}  // namespace

TensorRef gather(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t axis) {
  const TensorInfo di = g.info(data), ii = g.info(indices);
  require_index_dtype(g, indices, "gather");
  uint32_t bits = elem_bits(g, di.dtype, "gather");
  if (di.shape.empty()) throw Error(ErrorKind::InvalidArgument, "gather: data is a scalar");
  int a = normalize_axis(axis, di.shape.size(), "gather");
  check_constant_indices(g, indices, di.shape[a], "gather");
  Shape out = shapes::gather_shape(di.shape, ii.shape, a);
  TensorRef y = g.add_tensor(out, di.dtype);
  int64_t inner = numel(Shape(di.shape.begin() + a + 1, di.shape.end()));
  int64_t n = numel(out);
  PushConstants pc;
  pc.add(checked_i32(n, "gather", "element count"))
      .add(checked_i32(di.shape[a], "gather", "dim"))
      .add(checked_i32(inner, "gather", "dim"))
      .add(checked_i32(numel(ii.shape), "gather", "index count"));
  add_elementwise(g, declared(shaders::gather::find(shaders::gather::Kind::Gather, bits), "gather"),
                  {{data, Access::Read}, {indices, Access::Read}, {y, Access::Write}}, n, pc.take(),
                  "gather", {wide_indices(g, indices)});
  return y;
}

TensorRef gather_elements(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t axis) {
  const std::string op = "gather_elements";
  TensorInfo di = g.info(data), ii = g.info(indices);
  const Shape out_shape = ii.shape;
  require_index_dtype(g, indices, op);
  uint32_t bits = elem_bits(g, di.dtype, op);
  if (!di.shape.empty() && di.shape.size() == ii.shape.size()) {
    int merged_axis = normalize_axis(axis, di.shape.size(), op);
    Shape d = di.shape, i = ii.shape;
    merge_dims_off_axis(d, i, merged_axis);
    if (d != di.shape) {
      check_elementwise_indices(di, ii, axis, op, false);  // on the shapes the caller gave
      data = g.add_view(data, d);
      indices = g.add_view(indices, i);
      di.shape = d;
      ii.shape = i;
      axis = merged_axis;
    }
  }
  int a = check_elementwise_indices(di, ii, axis, op);
  check_constant_indices(g, indices, di.shape[a], op);
  TensorRef y = g.add_tensor(ii.shape, di.dtype);
  int64_t n = numel(ii.shape);
  add_elementwise(g,
                  declared(shaders::gather::find(shaders::gather::Kind::GatherElements, bits), op),
                  {{data, Access::Read}, {indices, Access::Read}, {y, Access::Write}}, n,
                  elementwise_push(n, di, ii, a, op), op, {wide_indices(g, indices)});
  return ii.shape == out_shape ? y : g.add_view(y, out_shape);
}

TensorRef scatter_elements(ComputeGraph& g, TensorRef data, TensorRef indices, TensorRef updates,
                           int64_t axis, ScatterReduction reduction) {
  const std::string op = "scatter_elements";
  const TensorInfo di = g.info(data), ii = g.info(indices), ui = g.info(updates);
  require_index_dtype(g, indices, op);
  if (ui.shape != ii.shape || ui.dtype != di.dtype)
    throw Error(ErrorKind::InvalidArgument,
                op + ": updates " + shape_str(ui.shape) + " " + dtype_name(ui.dtype) +
                    " must have the indices' shape " + shape_str(ii.shape) +
                    " and the data's dtype " + dtype_name(di.dtype));
  // None moves elements (per element size); the reductions compute (per dtype).
  using shaders::scatter::Reduce;
  std::optional<vk::ShaderId> shader;
  switch (reduction) {
    case ScatterReduction::None:
      shader = shaders::gather::find(shaders::gather::Kind::ScatterElementsNone,
                                     elem_bits(g, di.dtype, op));
      break;
    case ScatterReduction::Add:
      shader = shaders::scatter::find(Reduce::Add, typed_dtype(g, di.dtype, op));
      break;
    case ScatterReduction::Mul:
      shader = shaders::scatter::find(Reduce::Mul, typed_dtype(g, di.dtype, op));
      break;
    case ScatterReduction::Max:
      shader = shaders::scatter::find(Reduce::Max, typed_dtype(g, di.dtype, op));
      break;
    case ScatterReduction::Min:
      shader = shaders::scatter::find(Reduce::Min, typed_dtype(g, di.dtype, op));
      break;
  }
  int a = check_elementwise_indices(di, ii, axis, op);
  check_constant_indices(g, indices, di.shape[a], op);
  TensorRef y = g.add_tensor(di.shape, di.dtype);
  g.add_copy(data, y, 0, 0, di.nbytes(), op);
  int64_t fibers = ii.shape[a] == 0 ? 0 : numel(ii.shape) / ii.shape[a];
  add_elementwise(g, declared(shader, op),
                  {{indices, Access::Read}, {updates, Access::Read}, {y, Access::ReadWrite}},
                  fibers, elementwise_push(fibers, di, ii, a, op), op, {wide_indices(g, indices)});
  return y;
}

}  // namespace vkgraph::ops
