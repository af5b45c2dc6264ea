#include "vkgraph/shaders/softmax.h"

#include <limits>

#include "op_util.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {

TensorRef softmax(ComputeGraph& g, TensorRef x, int axis, bool log) {
  std::string name = log ? "log_softmax" : "softmax";
  const TensorInfo xi = g.info(x);
  const DType dtype = float_dtype(g, xi.dtype, name);
  check(!xi.shape.empty(), ErrorKind::InvalidArgument, name + ": input is a scalar; needs an axis");
  int a = normalize_axis(axis, xi.shape.size(), name);
  int64_t n = numel(xi.shape);
  check(n <= std::numeric_limits<uint32_t>::max(), ErrorKind::Unsupported,
        name + ": " + std::to_string(n) + " elements exceed the 32-bit index range");
  int64_t len = xi.shape[a];
  int64_t inner = 1;
  for (size_t d = a + 1; d < xi.shape.size(); ++d) inner *= xi.shape[d];
  int64_t rows = len == 0 ? 0 : n / len;

  // A workgroup per row reads a long contiguous row together; one invocation per row wins when
  // rows are short, or strided with many rows, so that neighbouring invocations read
  // neighbouring elements.
  bool row_per_thread = len <= 32 || (inner > 1 && rows >= 4096);
  TensorRef y = g.add_tensor(xi.shape, xi.dtype);
  PushConstants pc;
  pc.add(static_cast<uint32_t>(rows)).add(static_cast<uint32_t>(len));
  pc.add(static_cast<uint32_t>(inner));
  DispatchDesc d;
  d.shader = declared(shaders::softmax::find(log, dtype), name);
  d.bindings = {{x, Access::Read}, {y, Access::Write}};
  d.groups = row_per_thread ? groups_for(rows) : groups_for(rows, 1);
  d.local = {kLocal, 1, 1};
  d.spec = {row_per_thread ? 1u : 0u};
  d.push = pc.take();
  d.label = name;
  g.add_dispatch(std::move(d));
  return y;
}

}  // namespace vkgraph::ops
