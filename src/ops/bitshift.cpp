// Bit shifts of unsigned integers: broadcast binary ops over Int32 / Int64 storage.
#include "vkgraph/ops/bitshift.h"

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TensorRef bit_shift(ComputeGraph& g, TensorRef x, TensorRef amount, ShiftDirection direction,
                    uint32_t bits) {
  const std::string name = std::string("bit_shift_") + shaders::bitshift::name(direction);
  const TensorInfo xi = g.info(x), ai = g.info(amount);
  if (xi.dtype != ai.dtype)
    throw Error(ErrorKind::InvalidArgument, name + ": dtypes differ (" + dtype_name(xi.dtype) +
                                                " vs " + dtype_name(ai.dtype) + ")");
  const bool narrow = bits == 8 || bits == 16, wide = bits == 32 || bits == 64;
  if (!narrow && !wide)
    throw Error(ErrorKind::InvalidArgument,
                name + ": width " + std::to_string(bits) + " is not 8, 16, 32 or 64");
  const DType storage = narrow ? DType::Int32 : DType::Int64;
  if (xi.dtype != storage)
    throw Error(ErrorKind::InvalidArgument, name + ": " + std::to_string(bits) +
                                                "-bit values are held in " + dtype_name(storage) +
                                                " tensors, got " + dtype_name(xi.dtype));
  const Shape out = broadcast_shapes(xi.shape, ai.shape, name.c_str());
  if (out.size() > static_cast<size_t>(kMaxRank))
    throw Error(ErrorKind::Unsupported, name + ": rank " + std::to_string(out.size()) + " above " +
                                            std::to_string(kMaxRank));
  const vk::ShaderId shader =
      declared(shaders::bitshift::find(direction, typed_dtype(g, storage, name)), name);
  TensorRef c = g.add_tensor(out, storage);
  const int64_t n = numel(out);
  PushConstants pc;
  pc.add(checked_i32(n, name, "element count")).add(static_cast<int32_t>(out.size()));
  pc.add_array(to_i32(out, name), kMaxRank);
  pc.add_array(broadcast_strides(xi.shape, out), kMaxRank);
  pc.add_array(broadcast_strides(ai.shape, out), kMaxRank);
  pc.add(bits);
  add_elementwise(g, shader, {{x, Access::Read}, {amount, Access::Read}, {c, Access::Write}}, n,
                  pc.take(), name);
  return c;
}

}  // namespace vkgraph::ops
