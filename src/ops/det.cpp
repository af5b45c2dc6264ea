// Det: the input is copied to a scratch tensor that the kernel eliminates in place, so the
// kernel needs no per-invocation storage of its own whatever M is.
#include "vkgraph/ops/det.h"

#include "shape_ops.h"

namespace vkgraph::ops {

TensorRef det(ComputeGraph& g, TensorRef x) {
  const std::string op = "det";
  const TensorInfo xi = g.info(x);
  require_dtype(g, x, DType::Float32, op);
  const size_t rank = xi.shape.size();
  if (rank < 2 || xi.shape[rank - 1] != xi.shape[rank - 2])
    throw Error(ErrorKind::InvalidArgument,
                op + ": input " + shape_str(xi.shape) + " is not [..., M, M]");
  const Shape out(xi.shape.begin(), xi.shape.end() - 2);
  TensorRef y = g.add_tensor(out, DType::Float32);
  const int64_t matrices = numel(out), m = xi.shape[rank - 1];
  if (matrices == 0) return y;
  if (m == 0) {  // the determinant of a 0 x 0 matrix is 1
    g.add_copy(
        g.add_constant(HostTensor::from(DType::Float32, out, std::vector<float>(matrices, 1.f))), y,
        0, 0, static_cast<uint64_t>(matrices) * 4, op);
    return y;
  }
  TensorRef work = g.add_tensor(xi.shape, DType::Float32);
  g.add_copy(x, work, 0, 0, xi.nbytes(), op);
  PushConstants pc;
  pc.add(checked_i32(matrices, op, "matrix count")).add(checked_i32(m, op, "size"));
  add_elementwise(g, "det_f32", {{work, Access::ReadWrite}, {y, Access::Write}}, matrices,
                  pc.take(), op);
  return y;
}

}  // namespace vkgraph::ops
