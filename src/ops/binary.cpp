#include <algorithm>

#include "op_util.h"
#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TensorRef binary(ComputeGraph& g, BinaryOp op, TensorRef a, TensorRef b) {
  std::string name = shaders::binary::name(op);
  const TensorInfo &ia = g.info(a), &ib = g.info(b);
  if (ia.dtype != ib.dtype)
    throw Error(ErrorKind::InvalidArgument, name + ": dtypes differ (" + dtype_name(ia.dtype) +
                                                " vs " + dtype_name(ib.dtype) + ")");
  Shape out = broadcast_shapes(ia.shape, ib.shape, name.c_str());
  check(out.size() <= kMaxRank, ErrorKind::Unsupported,
        name + ": rank " + std::to_string(out.size()) + " above " + std::to_string(kMaxRank));
  TensorRef c = g.add_tensor(out, ia.dtype);
  int64_t n = numel(out);
  PushConstants pc;
  pc.add(static_cast<int32_t>(n)).add(static_cast<int32_t>(out.size()));
  pc.add_array(to_i32(out, name), kMaxRank);
  pc.add_array(broadcast_strides(ia.shape, out), kMaxRank);
  pc.add_array(broadcast_strides(ib.shape, out), kMaxRank);
  // Same shapes (no broadcast) in 4-element groups take the index-free vec4 variant.
  bool vec4 = ia.shape == out && ib.shape == out && n % 4 == 0 && ia.dtype != DType::Int64;
  if (vec4) {
    PushConstants flat;
    flat.add(static_cast<int32_t>(n / 4)).add(int32_t{0});
    flat.add_array(std::vector<int32_t>{}, 3 * kMaxRank);
    pc = std::move(flat);
  }
  DispatchDesc d;
  bool is_float = ia.dtype == DType::Float32 || ia.dtype == DType::Float16;
  DType dtype = is_float ? float_dtype(g, ia.dtype, name) : typed_dtype(g, ia.dtype, name);
  // float16 arithmetic where the op has such a variant and the device allows it.
  std::optional<vk::ShaderId> half;
  if (dtype == DType::Float16 && half_arithmetic(g))
    half = shaders::binary::find(op, dtype, vec4, true);
  d.shader = half ? *half : declared(shaders::binary::find(op, dtype, vec4, false), name);
  d.bindings = {{a, Access::Read}, {b, Access::Read}, {c, Access::Write}};
  if (vec4) {
    // Tuned on the H200 (docs/bench/2026-11-29-h200-kernels.md): 1-D grid-stride dispatch.
    uint32_t local = tuned(g, "add.local", 256), unroll = tuned(g, "add.unroll", 4);
    uint64_t max_groups =
        std::min(tuned(g, "add.groups", 65535), g.context().limits().maxComputeWorkGroupCount[0]);
    uint64_t per_group = uint64_t{local} * unroll;
    d.groups = {static_cast<uint32_t>(
                    std::clamp<uint64_t>((n / 4 + per_group - 1) / per_group, 1, max_groups)),
                1, 1};
    d.local = {local, 1, 1};
    d.spec = {unroll};
  } else {
    d.groups = groups_for(n);
    d.local = {kLocal, 1, 1};
  }
  d.push = pc.take();
  d.label = name;
  g.add_dispatch(std::move(d));
  return c;
}

}  // namespace vkgraph::ops
