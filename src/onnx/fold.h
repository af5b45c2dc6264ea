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
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "vkgraph/types.h"

namespace onnx {
class NodeProto;
}

namespace vkgraph::fold {

// Largest output a single evaluation may produce; folding bigger tensors into the model
// would bloat it, so evaluate() refuses with Unsupported.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

// One attribute type's name -> value table. Lookups are recorded, so that after a node is
// lowered or folded the importer can tell which of its attributes nothing read: a misspelled
// name, a value of the wrong type, or an attribute the lowering does not implement. Reading
// through a table therefore declares the attribute known; no per-op list exists elsewhere.
template <typename V>
class AttrTable {
 public:
  using Map = std::map<std::string, V>;
  AttrTable() = default;
  AttrTable(std::initializer_list<typename Map::value_type> values) : map_(values) {}
  typename Map::const_iterator find(const std::string& name) const {
    read_.insert(name);
    return map_.find(name);
  }
  size_t count(const std::string& name) const {
    read_.insert(name);
    return map_.count(name);
  }
  const V& at(const std::string& name) const {
    read_.insert(name);
    return map_.at(name);
  }
  typename Map::const_iterator end() const { return map_.end(); }
  // For building the table.
  V& operator[](const std::string& name) { return map_[name]; }
  template <typename... Args>
  auto emplace(Args&&... args) {
    return map_.emplace(std::forward<Args>(args)...);
  }

  // Names present that no lookup asked for.
  void add_unread(std::vector<std::string>& names) const {
    for (const auto& [name, value] : map_)
      if (!read_.count(name)) names.push_back(name);
  }
  void forget_reads() const { read_.clear(); }

 private:
  Map map_;
  mutable std::set<std::string> read_;  // recording a lookup does not change the attributes
};

// The attributes of one node, decoupled from protobuf so that evaluators are testable alone.
struct Attrs {
  AttrTable<int64_t> ints;
  AttrTable<std::vector<int64_t>> int_lists;
  AttrTable<float> floats;
  AttrTable<std::vector<float>> float_lists;
  AttrTable<std::string> strings;
  AttrTable<HostTensor> tensors;  // e.g. ConstantOfShape's "value"
  // Attributes of types no lowering reads (graphs, sparse tensors, type protos): always unread
  // unless ignored.
  std::vector<std::string> other_types;

  int64_t get_int(const std::string& name, int64_t fallback) const;
  // nullptr when the attribute is absent.
  const std::vector<int64_t>* find_ints(const std::string& name) const;
  const HostTensor* find_tensor(const std::string& name) const;

  // Declares `name` known whatever its type, for an attribute that is valid ONNX and has no
  // effect on what vkgraph computes (BatchNormalization's momentum at inference, say). The
  // caller says why in a comment.
  void ignore(const std::string& name) const;
  // The attributes present that no lookup or ignore() named, in name order.
  std::vector<std::string> unread() const;
  // Starts the record afresh: a lowering that runs after a folding attempt declined must not
  // count the folder's reads as its own.
  void forget_reads() const;

 private:
  mutable std::set<std::string> ignored_;
};

// Converts a node's attributes. INT, INTS, FLOAT, FLOATS, STRING and TENSOR are kept; other
// attribute types (graphs, sparse tensors, ...) are skipped since no foldable op uses them.
Attrs attrs_from_node(const onnx::NodeProto& node);

// Ops: Shape Size Gather Slice Concat Unsqueeze Squeeze Cast CastLike Range ConstantOfShape
// Constant Reshape Expand Identity Transpose Tile NonZero GatherND ScatterND Trilu ReduceSum
// ReduceProd ReduceMin ReduceMax Where Add Sub Mul Div Mod Pow Min Max Equal Less Greater
// LessOrEqual GreaterOrEqual And Or Xor Not Neg Abs Sign Floor Ceil Round Sqrt Reciprocal Exp
// Log, and NonMaxSuppression and Unique (whose output sizes depend on the values, so the device
// cannot compute them without a readback). Data movement works for every dtype; arithmetic
// computes in int64 (Int32/Int64, wrapping like two's complement) or double (Float32/Float16,
// rounded on store), so integer results and float32 +-*/ match exactly; Pow, Exp and Log are
// double results rounded once, which a float32 kernel may miss by an ulp; Float16 results may
// differ in the last bit (rounded via float32).
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
