#include <algorithm>
#include <limits>

#include "op_util.h"
#include "shape_ops.h"
#include "vkgraph/ops.h"
#include "vkgraph/shaders/argmax.h"

namespace vkgraph::ops {
namespace {

// Shader name stem, as in reduce.cmake.
void check_index_range(const Shape& shape, const std::string& name) {
  int64_t n = numel(shape);
  check(n <= std::numeric_limits<uint32_t>::max(), ErrorKind::Unsupported,
        name + ": " + std::to_string(n) + " elements exceed the 32-bit index range");
}

DType int_capable_dtype(ComputeGraph& g, DType dtype, bool ints_allowed, const std::string& name) {
  if (dtype == DType::Float32 || dtype == DType::Float16) return float_dtype(g, dtype, name);
  if (!ints_allowed || (dtype != DType::Int32 && dtype != DType::Int64))
    throw Error(ErrorKind::Unsupported,
                name + ": dtype " + dtype_name(dtype) + " not supported (accepts " +
                    (ints_allowed ? "float32, float16, int32, int64" : "float32, float16") + ")");
  return typed_dtype(g, dtype, name);
}

// One invocation per output when each output reduces few elements, or when the reduced elements
// are strided and there are enough outputs that neighbouring invocations read neighbouring
// elements; otherwise a workgroup per output reads a long run together.
bool one_output_per_thread(int64_t outputs, int64_t reduced, bool reduced_innermost) {
  return reduced <= 32 || (!reduced_innermost && outputs >= 4096);
}

// Invocations of a workgroup that reduces one output: more for longer rows, so that each loads
// at most about 32 elements (4 rounds of reduce.comp's 8), up to 1024 or the device's limit
// (shared memory: 4 or 8 bytes per invocation). A few long rows (a squeeze-excite pool of 32
// channels of 112x112) would otherwise leave each invocation ~100 loads on a few compute units.
uint32_t row_reduce_threads(ComputeGraph& g, uint32_t n_red) {
  const VkPhysicalDeviceLimits& lim = g.context().limits();
  const uint32_t most =
      std::min({1024u, lim.maxComputeWorkGroupInvocations, lim.maxComputeWorkGroupSize[0],
                lim.maxComputeSharedMemorySize / 8});
  uint32_t threads = kLocal;
  while (threads * 2 <= most && threads * 32 < n_red) threads *= 2;
  return threads;
}

// The kept and the reduced dims of a row-major shape, with size-1 dims dropped and neighbours
// of the same kind merged (their strides chain), so the shader walks as few dims as possible.
struct SplitDims {
  std::vector<uint32_t> kept_shape, kept_stride, reduced_shape, reduced_stride;
  bool reduced_innermost = false;
};

SplitDims split_dims(const Shape& shape, const std::vector<bool>& reduced) {
  SplitDims s;
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  int last_kind = -1;  // kind of the previous dim kept in the lists: 0 kept, 1 reduced
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    int kind = reduced[d] ? 1 : 0;
    auto& sizes = kind ? s.reduced_shape : s.kept_shape;
    auto& steps = kind ? s.reduced_stride : s.kept_stride;
    if (kind == last_kind) {
      sizes.back() *= static_cast<uint32_t>(shape[d]);
      steps.back() = static_cast<uint32_t>(strides[d]);
    } else {
      sizes.push_back(static_cast<uint32_t>(shape[d]));
      steps.push_back(static_cast<uint32_t>(strides[d]));
    }
    last_kind = kind;
  }
  s.reduced_innermost = last_kind == 1;
  return s;
}

uint32_t product(const std::vector<uint32_t>& v) {
  uint32_t p = 1;
  for (uint32_t x : v) p *= x;
  return p;
}

}  // namespace

TensorRef reduce(ComputeGraph& g, ReduceOp op, TensorRef x, std::vector<int64_t> axes,
                 bool keepdims) {
  std::string name = std::string("reduce_") + shaders::reduce::name(op);
  const TensorInfo xi = g.info(x);
  bool ints_allowed = shaders::reduce::find(op, DType::Int32).has_value();
  DType dtype = int_capable_dtype(g, xi.dtype, ints_allowed, name);
  check_index_range(xi.shape, name);
  size_t rank = xi.shape.size();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    check(rank > 0, ErrorKind::InvalidArgument,
          name + ": axis " + std::to_string(axis) + " given for a scalar input");
    int a = normalize_axis(axis, rank, name);
    check(!reduced[a], ErrorKind::InvalidArgument,
          name + ": axis " + std::to_string(axis) + " listed twice");
    reduced[a] = true;
  }
  Shape out = shapes::reduced_shape(xi.shape, reduced, keepdims);

  SplitDims s = split_dims(xi.shape, reduced);
  check(s.kept_shape.size() <= kMaxRank && s.reduced_shape.size() <= kMaxRank,
        ErrorKind::Unsupported,
        name + ": shape " + shape_str(xi.shape) + " alternates kept and reduced dims too often");
  uint32_t n_out = product(s.kept_shape), n_red = product(s.reduced_shape);
  bool per_thread = one_output_per_thread(n_out, n_red, s.reduced_innermost);

  TensorRef y = g.add_tensor(out, xi.dtype);
  PushConstants pc;
  pc.add(n_out).add(n_red);
  pc.add(static_cast<uint32_t>(s.kept_shape.size()));
  pc.add(static_cast<uint32_t>(s.reduced_shape.size()));
  pc.add_array(s.kept_shape, kMaxRank).add_array(s.kept_stride, kMaxRank);
  pc.add_array(s.reduced_shape, kMaxRank).add_array(s.reduced_stride, kMaxRank);
  DispatchDesc d;
  d.shader = declared(shaders::reduce::find(op, dtype), name);
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  // Knob reduce.unroll=0: one load per loop trip and kLocal invocations per output, as before.
  const bool unrolled = tuned(g, "reduce.unroll", 1) != 0;
  d.groups = per_thread ? groups_for(n_out) : groups_for(n_out, 1);
  d.local = {per_thread || !unrolled ? kLocal : row_reduce_threads(g, n_red), 1, 1};
  d.spec = {per_thread ? 1u : 0u, unrolled ? 1u : 0u};
  d.push = pc.take();
  d.label = name;
  g.add_dispatch(std::move(d));
  return y;
}

TensorRef argmax(ComputeGraph& g, TensorRef x, int64_t axis, bool keepdims, bool select_last_index,
                 bool is_min) {
  std::string name = is_min ? "argmin" : "argmax";
  const TensorInfo xi = g.info(x);
  DType dtype = int_capable_dtype(g, xi.dtype, true, name);
  check_index_range(xi.shape, name);
  check(!xi.shape.empty(), ErrorKind::InvalidArgument, name + ": input is a scalar; needs an axis");
  int a = normalize_axis(axis, xi.shape.size(), name);
  int64_t len = xi.shape[a];
  check(len > 0, ErrorKind::InvalidArgument,
        name + ": axis " + std::to_string(axis) + " of " + shape_str(xi.shape) + " is empty");
  int64_t inner = 1;
  for (size_t d = a + 1; d < xi.shape.size(); ++d) inner *= xi.shape[d];
  int64_t n_out = numel(xi.shape) / len;
  Shape out = xi.shape;
  if (keepdims)
    out[a] = 1;
  else
    out.erase(out.begin() + a);
  bool per_thread = one_output_per_thread(n_out, len, inner == 1);

  TensorRef y = g.add_tensor(out, DType::Int64);
  PushConstants pc;
  pc.add(static_cast<uint32_t>(n_out)).add(static_cast<uint32_t>(len));
  pc.add(static_cast<uint32_t>(inner));
  DispatchDesc d;
  d.shader = declared(shaders::argmax::find(dtype), name);
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  d.groups = per_thread ? groups_for(n_out) : groups_for(n_out, 1);
  d.local = {kLocal, 1, 1};
  d.spec = {per_thread ? 1u : 0u, is_min ? 1u : 0u, select_last_index ? 1u : 0u};
  d.push = pc.take();
  d.label = name;
  g.add_dispatch(std::move(d));
  return y;
}

}  // namespace vkgraph::ops
