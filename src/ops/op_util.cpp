#include "op_util.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "core/shape_rules.h"
#include "vkgraph/ops/tuning.h"

namespace vkgraph::ops {

std::array<uint32_t, 3> groups_for(uint64_t n, uint32_t local) {
  uint64_t groups = std::max<uint64_t>(1, shapes::ceil_div(n, local));
  if (groups <= 65535) return {static_cast<uint32_t>(groups), 1, 1};
  uint64_t y = shapes::ceil_div(groups, 65535);
  check(y <= 65535, ErrorKind::Unsupported, "dispatch of " + std::to_string(n) + " is too large");
  return {65535, static_cast<uint32_t>(y), 1};
}

uint32_t Tuning::knob(const std::string& key, uint32_t fallback) const {
  auto it = knobs.find(key);
  return it == knobs.end() ? fallback : it->second;
}

Tuning Tuning::from_knobs(std::string_view spec) {
  Tuning t;
  size_t at = 0;
  while (at <= spec.size()) {
    size_t end = std::min(spec.find(',', at), spec.size());
    std::string item(spec.substr(at, end - at));
    size_t eq = item.find('=');
    // The first setting of a key wins, as it did when the environment was searched per key.
    if (eq != std::string::npos)
      t.knobs.emplace(item.substr(0, eq),
                      static_cast<uint32_t>(std::strtoul(item.c_str() + eq + 1, nullptr, 10)));
    at = end + 1;
  }
  return t;
}

uint32_t tuned(ComputeGraph& g, const std::string& key, uint32_t fallback) {
  const Tuning* tuning = g.options().tuning.get();
  return tuning ? tuning->knob(key, fallback) : fallback;
}

// Off unless "fp16.math=1": on the H200 (NVIDIA 580.159) the float16 Add/Sub/Mul/Max/Min do
// not match float32 rounded once (BinaryFloat16.HalfArithmeticMatchesFloat32Rounded fails
// there, passes on lavapipe), and no speed-up has been measured yet.
bool half_arithmetic(ComputeGraph& g) {
  return g.context().features().shader_float16 && tuned(g, "fp16.math", 0) != 0;
}

int normalize_axis(int64_t axis, size_t rank, const std::string& op) {
  return static_cast<int>(shapes::normalize_axis(axis, static_cast<int64_t>(rank), op));
}

int64_t checked_mul(int64_t a, int64_t b, const std::string& op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(ErrorKind::InvalidArgument,
                op + ": " + std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const std::string& op) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(ErrorKind::InvalidArgument,
                op + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
  return r;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  std::optional<Shape> out = shapes::broadcast({&a, &b});
  if (!out)
    throw Error(ErrorKind::InvalidArgument, std::string(op) + ": shapes " + shape_str(a) + " and " +
                                                shape_str(b) + " do not broadcast");
  return *out;
}

std::vector<int32_t> broadcast_strides(const Shape& shape, const Shape& out) {
  // Every tensor's element count fits the shaders' 32-bit indexing (checked where it is
  // dispatched), so its strides do too.
  const std::vector<int64_t> strides = shapes::broadcast_strides(shape, out);
  return std::vector<int32_t>(strides.begin(), strides.end());
}

std::vector<int32_t> to_i32(const Shape& shape, const std::string& op) {
  std::vector<int32_t> v;
  for (int64_t d : shape) {
    if (d > std::numeric_limits<int32_t>::max())
      throw Error(ErrorKind::Unsupported, op + ": dimension " + std::to_string(d) + " too large");
    v.push_back(static_cast<int32_t>(d));
  }
  return v;
}

void require_dtype(ComputeGraph& g, TensorRef t, DType dtype, const std::string& op) {
  const TensorInfo& ti = g.info(t);
  if (ti.dtype != dtype)
    throw Error(ErrorKind::Unsupported, op + ": tensor '" + ti.name + "' is " +
                                            dtype_name(ti.dtype) + ", expected " +
                                            dtype_name(dtype));
}

DType float_dtype(ComputeGraph& g, DType dtype, const std::string& op) {
  if (dtype == DType::Float32) return dtype;
  check(dtype == DType::Float16, ErrorKind::Unsupported,
        op + ": dtype " + dtype_name(dtype) + " not supported (accepts float32, float16)");
  check(g.context().features().storage_buffer_16bit, ErrorKind::Unsupported,
        op + ": float16 tensors need storageBuffer16BitAccess, which " +
            g.context().properties().deviceName + " lacks");
  return dtype;
}

DType float_dtype(ComputeGraph& g, TensorRef t, std::initializer_list<TensorRef> same,
                  const std::string& op) {
  DType dtype = float_dtype(g, g.info(t).dtype, op);
  for (TensorRef s : same) require_dtype(g, s, dtype, op);
  return dtype;
}

vk::ShaderId declared(std::optional<vk::ShaderId> variant, const std::string& op) {
  check(variant.has_value(), ErrorKind::Unsupported,
        op + ": no shader variant is declared for these operands");
  return *variant;
}

std::optional<EpilogueActivation> epilogue_activation(UnaryOp op) {
  int code = shaders::unary::epilogue(op);
  if (code < 0) return std::nullopt;
  return static_cast<EpilogueActivation>(code);
}

std::string shader_suffix(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "f32";
    case DType::Float16:
      return "f16";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Bool:
      return "bool";
    default:
      throw Error(ErrorKind::Unsupported,
                  std::string("no shader suffix for dtype ") + dtype_name(dtype));
  }
}

}  // namespace vkgraph::ops
