// GatherND and ScatterND: the host checks shapes and computes each indexed dim's size and
// stride; the shaders turn a coordinate tuple into a slice offset (nd_index.comp).
#include "vkgraph/ops/nd_index.h"

#include "shape_ops.h"

namespace vkgraph::ops {
namespace {

// Where the coordinate tuples point: the k data dims after `batch_dims`, and how far apart
// their elements are.
struct TupleLayout {
  int64_t k = 0, tuples = 0, slice = 1;
  std::vector<int32_t> dims, strides;
};

TupleLayout tuple_layout(ComputeGraph& g, const TensorInfo& data, TensorRef indices,
                         int64_t batch_dims, const std::string& op) {
  const TensorInfo ii = g.info(indices);
  require_index_dtype(g, indices, op);
  if (ii.shape.empty())
    throw Error(ErrorKind::InvalidArgument, op + ": indices must have at least one dim");
  TupleLayout l;
  l.k = ii.shape.back();
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (l.k < 1 || l.k > rank - batch_dims || l.k > kMaxRank)
    throw Error(ErrorKind::InvalidArgument, op + ": indices " + shape_str(ii.shape) + " address " +
                                                std::to_string(l.k) + " dims of data " +
                                                shape_str(data.shape) + " (batch_dims " +
                                                std::to_string(batch_dims) + ")");
  l.tuples = numel(Shape(ii.shape.begin(), ii.shape.end() - 1));
  const std::vector<int64_t> stride = shapes::contiguous_strides(data.shape);
  for (int64_t j = 0; j < l.k; ++j) {
    l.dims.push_back(checked_i32(data.shape[batch_dims + j], op, "dim"));
    l.strides.push_back(checked_i32(stride[batch_dims + j], op, "stride"));
  }
  l.slice = numel(Shape(data.shape.begin() + batch_dims + l.k, data.shape.end()));
  if (const HostTensor* v = g.constant_value(indices)) {
    for (int64_t i = 0; i < v->numel(); ++i) {
      const int64_t dim = l.dims[i % l.k], c = v->as_int(i);
      if (c < -dim || c >= dim)
        throw Error(ErrorKind::InvalidArgument,
                    op + ": index " + std::to_string(c) + " out of range for dim " +
                        std::to_string(batch_dims + i % l.k) + " of size " + std::to_string(dim));
    }
  }
  return l;
}

std::vector<uint8_t> push(int64_t n, const TupleLayout& l, int64_t per_batch, int64_t batch_stride,
                          const std::string& op) {
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"))
      .add(static_cast<int32_t>(l.k))
      .add(checked_i32(std::max<int64_t>(l.slice, 1), op, "slice size"))
      .add(checked_i32(l.tuples, op, "tuple count"))
      .add(checked_i32(std::max<int64_t>(per_batch, 1), op, "tuples per batch"))
      .add(checked_i32(batch_stride, op, "batch stride"));
  pc.add_array(l.dims, kMaxRank).add_array(l.strides, kMaxRank);
  return pc.take();
}

uint32_t wide(ComputeGraph& g, TensorRef indices) {
  return g.info(indices).dtype == DType::Int64 ? 1u : 0u;
}

}  // namespace

TensorRef gather_nd(ComputeGraph& g, TensorRef data, TensorRef indices, int64_t batch_dims) {
  const std::string op = "gather_nd";
  const TensorInfo di = g.info(data), ii = g.info(indices);
  const std::string bits = std::to_string(elem_bits(g, di.dtype, op));
  if (batch_dims < 0 ||
      batch_dims >= static_cast<int64_t>(std::min(di.shape.size(), ii.shape.size())))
    throw Error(ErrorKind::InvalidArgument, op + ": batch_dims " + std::to_string(batch_dims) +
                                                " out of range for data " + shape_str(di.shape) +
                                                " and indices " + shape_str(ii.shape));
  for (int64_t d = 0; d < batch_dims; ++d)
    if (di.shape[d] != ii.shape[d])
      throw Error(ErrorKind::InvalidArgument, op + ": batch dim " + std::to_string(d) +
                                                  " differs: data " + shape_str(di.shape) +
                                                  ", indices " + shape_str(ii.shape));
  const TupleLayout l = tuple_layout(g, di, indices, batch_dims, op);
  Shape out(ii.shape.begin(), ii.shape.end() - 1);
  out.insert(out.end(), di.shape.begin() + batch_dims + l.k, di.shape.end());
  TensorRef y = g.add_tensor(out, di.dtype);
  const int64_t batches = numel(Shape(ii.shape.begin(), ii.shape.begin() + batch_dims));
  const int64_t per_batch = batches == 0 ? 0 : l.tuples / batches;
  const int64_t batch_stride = numel(Shape(di.shape.begin() + batch_dims, di.shape.end()));
  const int64_t n = numel(out);
  add_elementwise(g, "gather_nd_" + bits,
                  {{data, Access::Read}, {indices, Access::Read}, {y, Access::Write}}, n,
                  push(n, l, per_batch, batch_stride, op), op, {wide(g, indices)});
  return y;
}

TensorRef scatter_nd(ComputeGraph& g, TensorRef data, TensorRef indices, TensorRef updates,
                     ScatterReduction reduction) {
  const std::string op = "scatter_nd";
  const TensorInfo di = g.info(data), ii = g.info(indices), ui = g.info(updates);
  const TupleLayout l = tuple_layout(g, di, indices, 0, op);
  Shape expected(ii.shape.begin(), ii.shape.end() - 1);
  expected.insert(expected.end(), di.shape.begin() + l.k, di.shape.end());
  if (ui.shape != expected || ui.dtype != di.dtype)
    throw Error(ErrorKind::InvalidArgument, op + ": updates " + shape_str(ui.shape) + " " +
                                                dtype_name(ui.dtype) + " must be " +
                                                shape_str(expected) + " " + dtype_name(di.dtype));
  std::string shader;
  switch (reduction) {
    case ScatterReduction::None:
      shader = "scatter_nd_none_" + std::to_string(elem_bits(g, di.dtype, op));
      break;
    case ScatterReduction::Add:
      shader = "scatter_nd_add_";
      break;
    case ScatterReduction::Mul:
      shader = "scatter_nd_mul_";
      break;
    case ScatterReduction::Max:
      shader = "scatter_nd_max_";
      break;
    case ScatterReduction::Min:
      shader = "scatter_nd_min_";
      break;
  }
  if (reduction != ScatterReduction::None) shader += shader_suffix(typed_dtype(g, di.dtype, op));
  TensorRef y = g.add_tensor(di.shape, di.dtype);
  g.add_copy(data, y, 0, 0, di.nbytes(), op);
  const int64_t n =
      reduction == ScatterReduction::None ? numel(ui.shape) : (l.tuples == 0 ? 0 : l.slice);
  add_elementwise(g, shader,
                  {{indices, Access::Read}, {updates, Access::Read}, {y, Access::ReadWrite}}, n,
                  push(n, l, 0, 0, op), op, {wide(g, indices)});
  return y;
}

}  // namespace vkgraph::ops
