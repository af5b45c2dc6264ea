// Pad and Tile: one shader maps each output coordinate to an input coordinate (or the constant).
// Tile is Pad in wrap mode with all the padding at the end.
#include "vkgraph/shaders/pad.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "shape_ops.h"
#include "vkgraph/ops.h"

namespace vkgraph::ops {
namespace {

const char* mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant:
      return "constant";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Edge:
      return "edge";
    case PadMode::Wrap:
      return "wrap";
  }
  return "?";
}

TensorRef add_pad(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& begin, const Shape& out,
                  PadMode mode, double value, const std::string& op) {
  const TensorInfo xi = g.info(x);
  uint32_t bits = elem_bits(g, xi.dtype, op);
  if (xi.shape.size() > static_cast<size_t>(kMaxRank))
    throw Error(ErrorKind::Unsupported, op + ": rank " + std::to_string(xi.shape.size()) +
                                            " above " + std::to_string(kMaxRank));
  auto words = value_words(xi.dtype, value, op);
  if (out == xi.shape && std::all_of(begin.begin(), begin.end(), [](int64_t b) { return b == 0; }))
    return g.add_view(x, out);
  TensorRef y = g.add_tensor(out, xi.dtype);
  int64_t n = numel(out);
  PushConstants pc;
  pc.add(checked_i32(n, op, "element count")).add(static_cast<int32_t>(out.size()));
  pc.add(words[0]).add(words[1]);
  pc.add_array(to_i32(out, op), kMaxRank);
  pc.add_array(to_i32(xi.shape, op), kMaxRank);
  std::vector<int32_t> b;
  for (int64_t v : begin) b.push_back(checked_i32(v, op, "pad"));
  pc.add_array(b, kMaxRank);
  add_elementwise(g, declared(shaders::pad::find(bits), op),
                  {{x, Access::Read}, {y, Access::Write}}, n, pc.take(), op,
                  {static_cast<uint32_t>(mode)});
  return y;
}

}  // namespace

TensorRef pad(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& pads, PadMode mode,
              double value, const std::vector<int64_t>& axes) {
  const TensorInfo xi = g.info(x);
  size_t rank = xi.shape.size();
  std::vector<int64_t> all(rank);
  for (size_t i = 0; i < rank; ++i) all[i] = static_cast<int64_t>(i);
  const std::vector<int64_t>& ax = axes.empty() ? all : axes;
  if (pads.size() != 2 * ax.size())
    throw Error(ErrorKind::InvalidArgument, "pad: " + std::to_string(pads.size()) + " pads for " +
                                                std::to_string(ax.size()) + " axes of " +
                                                shape_str(xi.shape) + " (need begins then ends)");
  std::vector<int64_t> begin(rank, 0);
  Shape out = xi.shape;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < ax.size(); ++i) {
    int a = normalize_axis(ax[i], rank, "pad");
    if (seen[a])
      throw Error(ErrorKind::InvalidArgument, "pad: axis " + std::to_string(a) + " repeated");
    seen[a] = true;
    begin[a] = pads[i];
    out[a] = checked_add(out[a], checked_add(pads[i], pads[i + ax.size()], "pad"), "pad");
    if (out[a] < 0)
      throw Error(ErrorKind::InvalidArgument, "pad: pads " + shape_str(pads) + " crop axis " +
                                                  std::to_string(a) + " of " + shape_str(xi.shape) +
                                                  " below zero");
    if (mode != PadMode::Constant && xi.shape[a] == 0 && out[a] > 0)
      throw Error(ErrorKind::InvalidArgument, std::string("pad: ") + mode_name(mode) +
                                                  " mode cannot fill empty axis " +
                                                  std::to_string(a) + " of " + shape_str(xi.shape));
  }
  return add_pad(g, x, begin, out, mode, value, "pad");
}

TensorRef tile(ComputeGraph& g, TensorRef x, const std::vector<int64_t>& repeats) {
  const TensorInfo xi = g.info(x);
  bool valid = repeats.size() == xi.shape.size();
  Shape out = xi.shape;
  for (size_t d = 0; valid && d < out.size(); ++d) {
    valid = repeats[d] >= 0;
    if (valid) out[d] = checked_mul(out[d], repeats[d], "tile");
  }
  if (!valid)
    throw Error(ErrorKind::InvalidArgument,
                "tile: repeats " + shape_str(repeats) + " do not fit input " + shape_str(xi.shape));
  return add_pad(g, x, std::vector<int64_t>(out.size(), 0), out, PadMode::Wrap, 0.0, "tile");
}

}  // namespace vkgraph::ops
