// Resize of NCHW images: nearest (any dtype), bilinear or bicubic (f32, f16), ONNX coordinate
// modes.
#include <limits>

#include "shape_ops.h"
#include "vkgraph/ops.h"
#include "vkgraph/shaders/resize_linear.h"
#include "vkgraph/shaders/resize_nearest.h"

namespace vkgraph::ops {

TensorRef resize(ComputeGraph& g, TensorRef x, const Shape& out_shape,
                 const ResizeOptions& options) {
  const TensorInfo xi = g.info(x);
  vk::ShaderRef shader;
  switch (options.mode) {
    case ResizeMode::Nearest:
      shader = declared(shaders::resize_nearest::find(elem_bits(g, xi.dtype, "resize")), "resize");
      break;
    case ResizeMode::Linear:
      shader = declared(shaders::resize_linear::find(float_dtype(g, xi.dtype, "resize (linear)")),
                        "resize");
      break;
    case ResizeMode::Cubic:
      shader = "resize_cubic_" + shader_suffix(float_dtype(g, xi.dtype, "resize (cubic)"));
      break;
  }
  bool valid = xi.shape.size() == 4 && out_shape.size() == 4 && out_shape[0] == xi.shape[0] &&
               out_shape[1] == xi.shape[1] && out_shape[2] >= 0 && out_shape[3] >= 0;
  if (!valid)
    throw Error(ErrorKind::InvalidArgument, "resize: " + shape_str(xi.shape) + " -> " +
                                                shape_str(out_shape) +
                                                " is not an NCHW resize of H and W");
  int64_t n = numel(out_shape);
  if (n > 0 && (xi.shape[2] == 0 || xi.shape[3] == 0))
    throw Error(ErrorKind::InvalidArgument, "resize: cannot fill " + shape_str(out_shape) +
                                                " from empty " + shape_str(xi.shape));
  if (options.scale_h < 0.f || options.scale_w < 0.f)
    throw Error(ErrorKind::InvalidArgument, "resize: negative scale");
  auto scale = [](float given, int64_t out, int64_t in) {
    return given > 0.f ? given : static_cast<float>(static_cast<double>(out) / in);
  };
  // The scale is exactly out / in when derived from the sizes or when the given float times in
  // is out (exact in double); then the shader rounds nearest in integers, as long as its
  // largest intermediate, about 4 in out, fits an int.
  auto exact = [&](float given, int64_t out, int64_t in) {
    if (options.coordinates == ResizeCoordinates::TfCropAndResize) return false;
    bool ratio = given == 0.f || static_cast<double>(given) * in == static_cast<double>(out);
    return ratio && 4 * out * in + 4 * out + 4 * in < std::numeric_limits<int32_t>::max();
  };
  const int32_t exact_bits = (exact(options.scale_h, out_shape[2], xi.shape[2]) ? 1 : 0) |
                             (exact(options.scale_w, out_shape[3], xi.shape[3]) ? 2 : 0);
  // Nearest moves raw elements, so its extrapolation value goes as the dtype's bits.
  const std::array<uint32_t, 2> extrapolation =
      options.mode == ResizeMode::Nearest
          ? value_words(xi.dtype, options.extrapolation_value, "resize")
          : std::array<uint32_t, 2>{0, 0};
  TensorRef y = g.add_tensor(out_shape, xi.dtype);
  PushConstants pc;
  pc.add(checked_i32(n, "resize", "element count"))
      .add(checked_i32(xi.shape[2], "resize", "dim"))
      .add(checked_i32(xi.shape[3], "resize", "dim"))
      .add(checked_i32(out_shape[2], "resize", "dim"))
      .add(checked_i32(out_shape[3], "resize", "dim"))
      .add(scale(options.scale_h, out_shape[2], xi.shape[2]))
      .add(scale(options.scale_w, out_shape[3], xi.shape[3]))
      .add(exact_bits)
      .add(options.cubic_coeff_a)
      .add(static_cast<int32_t>(options.exclude_outside))
      .add(options.roi[0])
      .add(options.roi[1])
      .add(options.roi[2])
      .add(options.roi[3])
      .add(static_cast<float>(options.extrapolation_value))
      .add(extrapolation[0])
      .add(extrapolation[1]);
  add_elementwise(
      g, shader, {{x, Access::Read}, {y, Access::Write}}, n, pc.take(), "resize",
      {static_cast<uint32_t>(options.coordinates), static_cast<uint32_t>(options.nearest)});
  return y;
}

}  // namespace vkgraph::ops
