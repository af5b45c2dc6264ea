// Cast between f32, i32, i64 and Bool, one shader per (from, to) pair, and between f32 and f16;
// f16 to or from the other types goes through f32.
#include "quant_util.h"
#include "vkgraph/shaders/cast.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

DType cast_dtype(ComputeGraph& g, DType dtype) {
  if (dtype != DType::Float16) return typed_dtype(g, dtype, "cast", true);
  check(g.context().features().storage_buffer_16bit, ErrorKind::Unsupported,
        "cast: float16 tensors need storageBuffer16BitAccess, which " +
            std::string(g.context().properties().deviceName) + " lacks");
  return dtype;
}

}  // namespace

TensorRef cast(ComputeGraph& g, TensorRef x, DType to) {
  const TensorInfo xi = g.info(x);
  if (is_quantized(xi.dtype) || is_quantized(to)) return convert_quantized(g, x, to);
  cast_dtype(g, xi.dtype);
  cast_dtype(g, to);
  if (to == xi.dtype) return g.add_view(x, xi.shape);
  const bool half = xi.dtype == DType::Float16 || to == DType::Float16;
  if (half && xi.dtype != DType::Float32 && to != DType::Float32)
    return cast(g, cast(g, x, DType::Float32), to);
  TensorRef y = g.add_tensor(xi.shape, to);
  int64_t n = numel(xi.shape);
  PushConstants pc;
  pc.add(checked_i32(n, "cast", "element count"));
  add_elementwise(g, declared(shaders::cast::find(xi.dtype, to), "cast"),
                  {{x, Access::Read}, {y, Access::Write}}, n, pc.take(), "cast");
  return y;
}

}  // namespace vkgraph::ops
