// RNN, GRU and LSTM (ops/recurrent.h). The lowering reads the attributes: directions, the
// activation list with its alphas and betas (as onnxruntime does: each function that takes
// an alpha or a beta consumes the next one of its list, or takes its ONNX default when the
// list is exhausted; a bidirectional op given one direction's functions uses them for both),
// clip, hidden_size (from R when absent), and the cell's own flags.
#include <algorithm>
#include <cctype>

#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"

namespace vkgraph::onnx_import {
namespace {

using ops::RecurrentActivation;
using ops::RecurrentCell;

// A model that breaks the op's rules (not one vkgraph cannot run): InvalidArgument.
[[noreturn]] void invalid(const Importer& im, const onnx::NodeProto& node,
                          const std::string& what) {
  throw Error(ErrorKind::InvalidArgument, im.where(node) + ": " + what);
}

struct FunctionSpec {
  const char* name;
  RecurrentActivation kind;
  int params;  // 0: none, 1: alpha, 2: alpha and beta
  float alpha, beta;
};

// ONNX's functions for recurrent ops, with their defaults (those of the ONNX ops by that name).
constexpr FunctionSpec kFunctions[] = {
    {"relu", RecurrentActivation::Relu, 0, 0.f, 0.f},
    {"tanh", RecurrentActivation::Tanh, 0, 0.f, 0.f},
    {"sigmoid", RecurrentActivation::Sigmoid, 0, 0.f, 0.f},
    {"affine", RecurrentActivation::Affine, 2, 1.f, 0.f},
    {"leakyrelu", RecurrentActivation::LeakyRelu, 1, 0.01f, 0.f},
    {"thresholdedrelu", RecurrentActivation::ThresholdedRelu, 1, 1.f, 0.f},
    {"scaledtanh", RecurrentActivation::ScaledTanh, 2, 1.f, 1.f},
    {"hardsigmoid", RecurrentActivation::HardSigmoid, 2, 0.2f, 0.5f},
    {"elu", RecurrentActivation::Elu, 1, 1.f, 0.f},
    {"softsign", RecurrentActivation::Softsign, 0, 0.f, 0.f},
    {"softplus", RecurrentActivation::Softplus, 0, 0.f, 0.f},
};

std::vector<ops::RecurrentFunction> functions_of(const Importer& im, const onnx::NodeProto& node,
                                                 const fold::Attrs& a, size_t per_dir,
                                                 size_t dirs) {
  std::vector<std::string> names;
  a.ignore("activations");  // a string list, read from the NodeProto: fold::Attrs has none
  for (const auto& attr : node.attribute())
    if (attr.name() == "activations")
      for (const auto& s : attr.strings()) names.push_back(s);
  if (names.empty()) return {};
  if (names.size() == per_dir && dirs == 2) names.insert(names.end(), names.begin(), names.end());
  if (names.size() != per_dir * dirs)
    invalid(im, node,
            std::to_string(names.size()) + " activations given, " + std::to_string(per_dir * dirs) +
                " expected");
  auto list = [&](const char* key) {
    auto it = a.float_lists.find(key);
    return it == a.float_lists.end() ? std::vector<float>{} : it->second;
  };
  const std::vector<float> alphas = list("activation_alpha"), betas = list("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<ops::RecurrentFunction> functions;
  for (const std::string& name : names) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const FunctionSpec* spec = nullptr;
    for (const FunctionSpec& f : kFunctions)
      if (lower == f.name) spec = &f;
    if (!spec) invalid(im, node, "unknown activation '" + name + "'");
    ops::RecurrentFunction f{spec->kind, spec->alpha, spec->beta};
    if (spec->params >= 1 && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (spec->params >= 2 && next_beta < betas.size()) f.beta = betas[next_beta++];
    functions.push_back(f);
  }
  return functions;
}

std::vector<Value> lower_recurrent(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                                   RecurrentCell cell) {
  im.require_inputs(node, 3, cell == RecurrentCell::Lstm ? 8 : 6);
  ops::RecurrentParams p;
  p.cell = cell;
  auto dir = a.strings.find("direction");
  const std::string direction = dir == a.strings.end() ? "forward" : dir->second;
  if (direction == "forward")
    p.direction = ops::RecurrentDirection::Forward;
  else if (direction == "reverse")
    p.direction = ops::RecurrentDirection::Reverse;
  else if (direction == "bidirectional")
    p.direction = ops::RecurrentDirection::Bidirectional;
  else
    invalid(im, node, "unknown direction '" + direction + "'");
  const Shape& r_shape = im.input(node, 2).shape;
  if (r_shape.size() != 3) invalid(im, node, "R " + shape_str(r_shape) + " must be 3-D");
  p.hidden_size = a.get_int("hidden_size", r_shape[2]);
  if (p.hidden_size != r_shape[2])
    invalid(
        im, node,
        "hidden_size " + std::to_string(p.hidden_size) + " does not match R " + shape_str(r_shape));
  const size_t dirs = p.direction == ops::RecurrentDirection::Bidirectional ? 2 : 1;
  p.activations = functions_of(im, node, a, ops::recurrent_function_count(cell), dirs);
  if (auto clip = a.floats.find("clip"); clip != a.floats.end()) {
    if (!(clip->second > 0.f))
      invalid(im, node, "clip " + std::to_string(clip->second) + " must be positive");
    p.clip = clip->second;
  }
  p.input_forget = a.get_int("input_forget", 0) != 0;
  p.linear_before_reset = a.get_int("linear_before_reset", 0) != 0;
  p.layout = a.get_int("layout", 0);
  return with_node(im, node, [&] {
    ops::RecurrentInputs in;
    in.x = im.tensor(node, 0);
    in.w = im.tensor(node, 1);
    in.r = im.tensor(node, 2);
    auto optional = [&](size_t i) -> std::optional<TensorRef> {
      if (!im.has_input(node, i)) return std::nullopt;
      return im.tensor(node, i);
    };
    in.b = optional(3);
    in.sequence_lens = optional(4);
    in.initial_h = optional(5);
    in.initial_c = optional(6);
    in.peepholes = optional(7);
    ops::RecurrentOutputs out = ops::recurrent(im.graph(), in, p);
    std::vector<Value> values{device(im, out.y), device(im, out.y_h)};
    if (out.y_c.valid()) values.push_back(device(im, out.y_c));
    return values;
  });
}

}  // namespace

void register_recurrent(LoweringTable& t) {
  // Every op the lowering emits (linear, transpose, the recurrence) has float16 kernels.
  t["RNN"] = {[](Importer& im, const onnx::NodeProto& n, const fold::Attrs& a) {
                return lower_recurrent(im, n, a, RecurrentCell::Rnn);
              },
              true};
  t["GRU"] = {[](Importer& im, const onnx::NodeProto& n, const fold::Attrs& a) {
                return lower_recurrent(im, n, a, RecurrentCell::Gru);
              },
              true};
  t["LSTM"] = {[](Importer& im, const onnx::NodeProto& n, const fold::Attrs& a) {
                 return lower_recurrent(im, n, a, RecurrentCell::Lstm);
               },
               true};
}

}  // namespace vkgraph::onnx_import
