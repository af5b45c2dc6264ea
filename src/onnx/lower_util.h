#pragma once
// Helpers for the lowerings of the op families in lower_<family>.cpp.
#include <utility>

#include "onnx/importer.h"
#include "vkgraph/ops/attention.h"

namespace vkgraph::onnx_import {

// A device tensor as the node's output value.
inline Value device(Importer& im, TensorRef t) {
  return Importer::device_value(im.graph(), t);
}

// Op errors name the op ("gather_nd: ..."); a lowering runs its op calls through with_node so
// the message names the model node too, as its own checks do.
template <typename F>
auto with_node(const Importer& im, const onnx::NodeProto& node, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const NeedsInputValues&) {
    throw;  // the build collects these; its message names the node already
  } catch (const NeedsComputedValues&) {
    throw;
  } catch (const Error& e) {
    if (e.message().rfind(im.where(node), 0) == 0) throw;
    throw Error(e.kind(), im.where(node) + ": " + e.message());
  }
}

// Input `input` of a fused node as its kernel reads it, where the pattern wrote the view with
// fuse::set_view under the name `x`: a strided view ("shape_x", "strides_x", "offset_x"), a
// permutation ("perm_x"), or the tensor as stored.
ops::StridedView fused_view(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                            int input, const std::string& x);

// MaxPool / AveragePool by the model node's op type (so also a fused QdqMaxPool, whose input 0
// is the 8-bit x) over `in`, with the node's window attributes (lower_nn.cpp).
std::vector<Value> lower_pool_of(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                                 TensorRef in);

}  // namespace vkgraph::onnx_import
