// RoiAlign: one invocation per output element; mode and coordinate mode are specialization
// constants.
#include "vkgraph/ops/roi_align.h"

#include "shape_ops.h"

namespace vkgraph::ops {

TensorRef roi_align(ComputeGraph& g, TensorRef x, TensorRef rois, TensorRef batch_indices,
                    const RoiAlignOptions& o) {
  const std::string op = "roi_align";
  const TensorInfo xi = g.info(x), ri = g.info(rois), bi = g.info(batch_indices);
  require_dtype(g, x, DType::Float32, op);
  require_dtype(g, rois, DType::Float32, op);
  require_index_dtype(g, batch_indices, op);
  if (xi.shape.size() != 4 || ri.shape.size() != 2 || ri.shape[1] != 4 ||
      bi.shape != Shape{ri.shape[0]})
    throw Error(ErrorKind::InvalidArgument, op + ": input " + shape_str(xi.shape) + ", rois " +
                                                shape_str(ri.shape) + " and batch_indices " +
                                                shape_str(bi.shape) +
                                                " must be [N, C, H, W], [R, 4] and [R]");
  if (o.output_height < 1 || o.output_width < 1 || o.sampling_ratio < 0)
    throw Error(ErrorKind::InvalidArgument, op + ": output size and sampling_ratio must be "
                                                 "positive (sampling_ratio may be 0)");
  if (const HostTensor* v = g.constant_value(batch_indices))
    for (int64_t i = 0; i < v->numel(); ++i)
      if (v->as_int(i) < 0 || v->as_int(i) >= xi.shape[0])
        throw Error(ErrorKind::InvalidArgument,
                    op + ": batch index " + std::to_string(v->as_int(i)) + " out of range for " +
                        std::to_string(xi.shape[0]) + " images");
  const Shape out{ri.shape[0], xi.shape[1], o.output_height, o.output_width};
  const int64_t n = numel(out);
  if (n > 0 && (xi.shape[2] == 0 || xi.shape[3] == 0))
    throw Error(ErrorKind::InvalidArgument, op + ": empty image " + shape_str(xi.shape));
  checked_i32(numel(xi.shape), op, "input size");
  TensorRef y = g.add_tensor(out, DType::Float32);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count"));
  for (int64_t d : {xi.shape[0], xi.shape[1], xi.shape[2], xi.shape[3], o.output_height,
                    o.output_width, o.sampling_ratio})
    pc.add(checked_i32(d, op, "size"));
  pc.add(o.spatial_scale);
  add_elementwise(
      g, "roi_align_f32",
      {{x, Access::Read}, {rois, Access::Read}, {batch_indices, Access::Read}, {y, Access::Write}},
      n, pc.take(), op,
      {bi.dtype == DType::Int64 ? 1u : 0u, o.max ? 1u : 0u, o.half_pixel ? 1u : 0u});
  return y;
}

}  // namespace vkgraph::ops
