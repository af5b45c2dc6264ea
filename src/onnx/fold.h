#pragma once
// CPU evaluators for ONNX constant folding at model load: the shape arithmetic that exporters
// emit (Shape -> Gather -> Concat -> Reshape, ...) is computed once on the host so that the
// GPU graph only sees static shapes. Inputs are small; clarity beats speed here.
//
// Errors: Error(Unsupported, "<op>: ...") for what folding does not handle (an op or dtype
// outside the list, an output over kMaxFoldElements) - the caller should then keep the node
// for the device; Error(InvalidArgument, "<op>: ...") for a node that is invalid by the ONNX
// spec (bad shapes, index out of range, integer division by zero).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vkgraph/types.h"

namespace onnx {
class NodeProto;
}

namespace vkgraph::fold {

// Largest output a single evaluation may produce; folding bigger tensors into the model
// would bloat it, so evaluate() refuses with Unsupported.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

// The attributes of one node, decoupled from protobuf so that evaluators are testable alone.
struct Attrs {
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::vector<int64_t>> int_lists;
  std::map<std::string, float> floats;
  std::map<std::string, std::vector<float>> float_lists;
  std::map<std::string, std::string> strings;
  std::map<std::string, HostTensor> tensors;  // e.g. ConstantOfShape's "value"

  int64_t get_int(const std::string& name, int64_t fallback) const;
  // nullptr when the attribute is absent.
  const std::vector<int64_t>* find_ints(const std::string& name) const;
  const HostTensor* find_tensor(const std::string& name) const;
};

// Converts a node's attributes. INT, INTS, FLOAT, FLOATS, STRING and TENSOR are kept; other
// attribute types (graphs, sparse tensors, ...) are skipped since no foldable op uses them.
Attrs attrs_from_node(const onnx::NodeProto& node);

// Ops: Shape Size Gather Slice Concat Unsqueeze Squeeze Cast CastLike Range ConstantOfShape
// Constant Reshape Expand Identity Transpose Tile NonZero ReduceSum ReduceProd Where
// Add Sub Mul Div Min Max Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Not
// Neg Abs Floor Ceil Sqrt, and NonMaxSuppression and Unique (whose output sizes depend on the
// values, so the device cannot compute them without a readback). Data movement works for every
// dtype; arithmetic computes in int64 (Int32/Int64, wrapping like two's complement) or double
// (Float32/Float16, rounded on store), so results match float32 and integer arithmetic exactly;
// Float16 results may differ in the last bit (rounded via float32).
//
// Whether evaluate() knows op_type (default ai.onnx domain). Even then evaluate() may throw
// Unsupported for a particular dtype or size.
bool can_fold(const std::string& op_type);

// Evaluates one node. `inputs` follows the node's input list, with nullptr for an omitted
// optional input (an empty name in ONNX). `opset` is the model's ai.onnx opset version. Where
// an opset moved an attribute to an input (Squeeze/Unsqueeze/ReduceSum/ReduceProd axes, Slice
// starts/ends/axes, Reshape shape) the input is used when present and the attribute otherwise,
// which is right for every valid model at any opset. Shape and Size read only the input's
// shape, so it may be a shape-only placeholder (empty bytes): that is how Shape(x) of a runtime
// tensor with a static shape is folded.
std::vector<HostTensor> evaluate(const std::string& op_type, const Attrs& attrs,
                                 const std::vector<const HostTensor*>& inputs, int opset);

}  // namespace vkgraph::fold
