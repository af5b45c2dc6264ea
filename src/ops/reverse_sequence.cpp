// ReverseSequence: a gather per element size; the time index each element reads is computed
// from its batch entry's length in the shader.
#include "vkgraph/ops/reverse_sequence.h"

#include "shape_ops.h"

namespace vkgraph::ops {

TensorRef reverse_sequence(ComputeGraph& g, TensorRef x, TensorRef sequence_lens,
                           int64_t batch_axis, int64_t time_axis) {
  const std::string op = "reverse_sequence";
  const TensorInfo xi = g.info(x), li = g.info(sequence_lens);
  const std::string bits = std::to_string(elem_bits(g, xi.dtype, op));
  require_index_dtype(g, sequence_lens, op);
  if (xi.shape.size() < 2)
    throw Error(ErrorKind::InvalidArgument,
                op + ": input " + shape_str(xi.shape) + " needs batch and time dims");
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    throw Error(ErrorKind::InvalidArgument, op + ": batch_axis " + std::to_string(batch_axis) +
                                                " and time_axis " + std::to_string(time_axis) +
                                                " must be 0 and 1");
  const int64_t batch = xi.shape[batch_axis], steps = xi.shape[time_axis];
  if (li.shape != Shape{batch})
    throw Error(ErrorKind::InvalidArgument, op + ": sequence_lens " + shape_str(li.shape) +
                                                " must be [" + std::to_string(batch) + "]");
  if (const HostTensor* v = g.constant_value(sequence_lens))
    for (int64_t i = 0; i < v->numel(); ++i)
      if (v->as_int(i) < 0 || v->as_int(i) > steps)
        throw Error(ErrorKind::InvalidArgument, op + ": sequence length " +
                                                    std::to_string(v->as_int(i)) + " outside [0, " +
                                                    std::to_string(steps) + "]");
  TensorRef y = g.add_tensor(xi.shape, xi.dtype);
  const int64_t n = numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"))
      .add(checked_i32(xi.shape[0], op, "dim"))
      .add(checked_i32(xi.shape[1], op, "dim"))
      .add(checked_i32(std::max<int64_t>(numel(Shape(xi.shape.begin() + 2, xi.shape.end())), 1), op,
                       "inner size"))
      .add(static_cast<int32_t>(time_axis == 0));
  add_elementwise(g, "reverse_sequence_" + bits,
                  {{x, Access::Read}, {sequence_lens, Access::Read}, {y, Access::Write}}, n,
                  pc.take(), op, {li.dtype == DType::Int64 ? 1u : 0u});
  return y;
}

}  // namespace vkgraph::ops
