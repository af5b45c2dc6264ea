#pragma once
// The load-time fusion pass. It rewrites ONNX nodes into nodes of the private domain
// `ai.vkgraph` (FusedConv, FusedGemm, FusedMatMul; FusedAttention in fuse_attention.h) that say
// everything their lowering emits in one op: the nodes a fused node replaces are not lowered at
// all. Lowerings then handle one node each and know nothing of fusion.
//
// The pass runs node by node, just before a node is lowered, rather than over the whole graph
// up front: whether a weight, a bias or a scale is a host constant is often learnt only while
// importing (Shape arithmetic folds once the shapes of lowered values are known), and whether a
// residual is computed yet depends on the node order. The Importer answers both. Patterns look
// forward from their first node, at consumers not visited yet; the nodes they absorb are skipped
// when the importer reaches them.
//
// Adding a pattern: write a function `std::optional<Fusion> f(const onnx::NodeProto& root,
// Pass&)` in fuse.cpp, list it in `kPatterns` under its root's op type (and a new fused op type
// in `model_op_types`), give its fused node a lowering registered under `fused_key(op)` and a
// test in tests/gpu/test_onnx_fusion.cpp (fused against unfused, and a case where it must not
// fire). docs/notes/arch-fusion.md lists the patterns and their tests.
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx/fold.h"
#include "vkgraph/ops.h"

namespace vkgraph::onnx_import {
class Importer;
}

namespace vkgraph::onnx_import::fuse {

inline constexpr const char* kDomain = "ai.vkgraph";

// The result of a pattern at `root`.
struct Fusion {
  // What the importer lowers instead of root. Its name is root's; its outputs are the outputs
  // of the last node it replaces. Unset: root is elided (it produces a view, see Context).
  std::optional<onnx::NodeProto> node;
  std::vector<const onnx::NodeProto*> absorbed;  // nodes after root that `node` computes
};

// Attributes of the fused nodes the patterns write, one setter per ONNX attribute type.
void set_attr(onnx::NodeProto& n, const char* name, int64_t value);
void set_attr(onnx::NodeProto& n, const char* name, float value);
void set_attr(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& values);
void set_attr(onnx::NodeProto& n, const char* name, const std::vector<float>& values);
void set_attr(onnx::NodeProto& n, const char* name, const std::string& value);

// The input of a binary node `consumer` that is not `value` (which it reads once).
inline int other_input(const onnx::NodeProto& consumer, const std::string& value) {
  return consumer.input(0) == value ? 1 : 0;
}

// An activation applied in a fused epilogue.
struct Activation {
  ops::UnaryOp op;
  ops::UnaryParams params;
};

// The pass's state over one import: Transposes it elided, which their readers read as
// permuted views of the elided chain's input (a view's source is never itself a view).
class Pass {
 public:
  explicit Pass(Importer& importer) : im_(importer) {}

  // The fused node that replaces `node`, or nullopt to lower `node` itself. A foldable node
  // whose inputs are all host constants is left to folding.
  std::optional<Fusion> rewrite(const onnx::NodeProto& node);

  // The output of a data-movement node the pass elided (fuse_view.h): readers see elements of
  // `source` (a computed value) through an element offset and a stride per dim. `perm` is set
  // when the view is `source` permuted and nothing else (FusedMatMul reads only those).
  // Resolving a value that is no view gives the value itself: no perm, no strides.
  struct View {
    std::string source;
    std::vector<int64_t> perm;
    Shape shape;  // the view's shape
    int64_t offset = 0;
    std::vector<int64_t> strides;  // in elements of source, one per dim of shape
    // Grouped-query heads (Llama's repeat_kv: Unsqueeze -> Expand -> Reshape): entry i of dim
    // `group_dim` is stored entry i / group, which strides[group_dim] steps; that dim holds
    // shape[group_dim] / group stored entries. Only the attention reads such a view in place
    // (its kernel shares a KV head between `group` query heads); it is never a permutation.
    int64_t group = 1;
    size_t group_dim = 0;
    // A view that is more than a permutation (an offset, split or merged dims): only readers
    // that take strides read it in place; for others the importer copies it out.
    bool strided() const { return !strides.empty() && perm.empty(); }
  };
  const View* view(const std::string& value) const;
  // Whether `value` is the output of a node the pass elided (a Transpose read as a view, a
  // DequantizeLinear whose readers all became integer kernels, ...): nothing computes it.
  bool elided(const std::string& value) const {
    return view(value) || dequantized_.count(value) > 0;
  }

  // --- for patterns ---
  const Importer& importer() const { return im_; }
  // Tuning knob `key` of the graph being built (VKGRAPH_TUNE), or `fallback`: the A/B switch
  // of a pattern ("fuse.rope=0" keeps the nodes it would replace).
  uint32_t knob(const std::string& key, uint32_t fallback) const;
  // The view that `value`, the output of a data-movement node not visited yet, will be once
  // the pass elides it, for a pattern that reads it before; else nullopt.
  std::optional<View> view_ahead(const std::string& value);
  // Importer::fold_ahead: whether `value` is (now) a host constant, folded ahead of model order.
  bool fold_ahead(const std::string& value) const;
  // The node that alone consumes `value`, when that is not a model output; null otherwise.
  const onnx::NodeProto* sole_consumer(const std::string& value) const;
  // Input `i` of `node` as the node sees it: itself, or the source and permutation of an
  // elided view.
  View resolve(const onnx::NodeProto& node, size_t i) const;
  void elide(const std::string& value, View view) { views_[value] = std::move(view); }
  // The attributes of a node the pattern looks at (root or one it absorbs). Patterns read
  // attributes only through this, so that what they did not read is known.
  const fold::Attrs& attrs(const onnx::NodeProto& node);
  // A DequantizeLinear output that no kernel reads: its readers read the quantized input. Also
  // DynamicQuantizeLinear's outputs once DynamicQuantRange replaced it, and a quantize_dynamic
  // layer's scale product that its fused node computes (fuse_dynamic_quant.h).
  void elide_dequantized(const std::string& value) { dequantized_.insert(value); }
  bool is_elided_dequantized(const std::string& value) const {
    return dequantized_.count(value) > 0;
  }

 private:
  bool reads_all_attributes(const onnx::NodeProto& root, const Fusion& f);

  Importer& im_;
  std::map<std::string, View> views_;
  std::map<const onnx::NodeProto*, fold::Attrs> attrs_;  // of the pattern being tried
  std::set<std::string> dequantized_;
};

// The op type of the model's node that a fused node replaced (FusedConv -> Conv); other nodes'
// own op type. Error messages, labels and the float16 policy speak of the model's node.
const std::string& model_op_type(const onnx::NodeProto& node);
bool is_fused(const onnx::NodeProto& node);
// The key of a node's lowering: the op type, prefixed by the domain ("domain.Op") outside the
// default domain, for fused nodes (the importer refuses model nodes of kDomain, so a model's
// own node can never reach a fused lowering) and com.microsoft ops.
std::string lowering_key(const onnx::NodeProto& node);
inline std::string fused_key(const std::string& op_type) {
  return std::string(kDomain) + "." + op_type;
}

// Epilogue matching shared by the patterns (fuse.cpp). residual_input: the input of `tail`'s
// sole consumer, an Add, that is a float32 tensor of `shape` computed before it (not a
// constant, not `tail`'s output), or -1. take_activation: an activation (one node, or the
// arithmetic an exporter wrote it out as) that alone reads `tail`'s output of rank `rank` and
// that `can_fuse` accepts, absorbed into `f` and recorded on `n` (attribute "activation").
int residual_input(Pass& p, const onnx::NodeProto& tail, const Shape& shape);
void take_activation(Pass& p, const onnx::NodeProto& tail, size_t rank,
                     bool (*can_fuse)(ops::UnaryOp), Fusion& f, onnx::NodeProto& n);

// Whether `perm` (rank >= 3) moves dim 1 to the end and keeps the others in order ([0, 2, 3, 1]:
// channels-first to channels-last), or with `back` the last dim to dim 1 ([0, 3, 1, 2]).
bool moves_channels(const std::vector<int64_t>& perm, bool back);

// A node of the private domain, named after the model's node `root` it replaces.
onnx::NodeProto fused_node(const onnx::NodeProto& root, const char* op_type);

// How a fused node's kernel reads its operand `x` (FusedAttention's q, k, v; FusedRope's x):
// attribute "perm_x" for a permutation of the stored tensor; "shape_x", "strides_x",
// "offset_x" for another view; nothing for the tensor as stored.
void set_view(onnx::NodeProto& n, const std::string& x, const Pass::View& view);

// The epilogue attributes of a fused node, as its lowering reads them; defaults for other nodes.
std::optional<Activation> activation(const onnx::NodeProto& node, const fold::Attrs& attrs);
float alpha(const onnx::NodeProto& node, const fold::Attrs& attrs);  // FusedMatMul's scale
std::vector<int64_t> perm(const onnx::NodeProto& node, const fold::Attrs& attrs, size_t input);

// The shape a Reshape of a tensor shaped `in` gives, its target a host constant (folded ahead
// when the exporter writes it later); nullopt for any other node or a target it cannot resolve
// (the Reshape, lowered alone, reports that).
std::optional<Shape> reshape_target(Pass& p, const onnx::NodeProto& r, const Shape& in);

// Input positions of FusedConv: x, w, bias, then BatchNormalization's four parameters (folded
// into the weights by the lowering) and the residual added before the activation; absent ones
// are empty names.
enum ConvInput : int {
  kConvX,
  kConvW,
  kConvBias,
  kBnScale,
  kBnBias,
  kBnMean,
  kBnVar,
  kConvResidual,
  kConvInputs
};

// Input positions of FusedMatMul: the operands (the sources of elided views), the [N] bias and
// the residual added after the scale, before the activation; absent ones are empty names.
enum MatMulInput : int { kMatMulA, kMatMulB, kMatMulBias, kMatMulResidual, kMatMulInputs };

// ChannelsFirstMatMul's inputs: x [B, S..., K], the constant weight [K, N], the [N] bias, the
// per-channel scale (one value, or N shaped [N, 1, ...] / [1, N, 1, ...]) and the residual,
// of the output's shape [B, N, S...]; absent ones are empty names.
enum ChannelsFirstInput : int {
  kChannelsFirstX,
  kChannelsFirstW,
  kChannelsFirstBias,
  kChannelsFirstScale,
  kChannelsFirstResidual,
  kChannelsFirstInputs
};

// FusedGemm's inputs: Gemm's A, B, C, then the residual added after alpha·AB + beta·C (absent:
// an empty name or none); with a residual, attribute "output_shape" is the shape its output is
// viewed as (the Add's: the Reshape and Transposes between Gemm and Add keep the order).
enum GemmInput : int { kGemmA, kGemmB, kGemmC, kGemmResidual, kGemmInputs };

}  // namespace vkgraph::onnx_import::fuse
