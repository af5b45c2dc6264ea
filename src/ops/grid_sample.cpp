// GridSample: mode, padding and align_corners are specialization constants, so each variant is
// straight-line code.
#include "vkgraph/ops/grid_sample.h"

#include "shape_ops.h"

namespace vkgraph::ops {

TensorRef grid_sample(ComputeGraph& g, TensorRef x, TensorRef grid,
                      const GridSampleOptions& options) {
  const std::string op = "grid_sample";
  const TensorInfo xi = g.info(x), gi = g.info(grid);
  const std::string suffix = shader_suffix(float_dtype(g, x, {grid}, op));
  if (xi.shape.size() != 4 || gi.shape.size() != 4 || gi.shape[0] != xi.shape[0] ||
      gi.shape[3] != 2)
    throw Error(ErrorKind::InvalidArgument, op + ": input " + shape_str(xi.shape) + " and grid " +
                                                shape_str(gi.shape) +
                                                " must be [N, C, H, W] and [N, Ho, Wo, 2]");
  const Shape out{xi.shape[0], xi.shape[1], gi.shape[1], gi.shape[2]};
  const int64_t n = numel(out);
  if (n > 0 && (xi.shape[2] == 0 || xi.shape[3] == 0))
    throw Error(ErrorKind::InvalidArgument,
                op + ": cannot sample an empty image " + shape_str(xi.shape));
  checked_i32(numel(xi.shape), op, "input size");
  TensorRef y = g.add_tensor(out, xi.dtype);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"));
  for (int64_t d : {xi.shape[1], xi.shape[2], xi.shape[3], gi.shape[1], gi.shape[2]})
    pc.add(checked_i32(d, op, "dim"));
  add_elementwise(g, "grid_sample_" + suffix,
                  {{x, Access::Read}, {grid, Access::Read}, {y, Access::Write}}, n, pc.take(), op,
                  {static_cast<uint32_t>(options.mode), static_cast<uint32_t>(options.padding),
                   options.align_corners ? 1u : 0u});
  return y;
}

}  // namespace vkgraph::ops
