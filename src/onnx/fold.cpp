// Constant folding's entry points (fold.h): the evaluator table and the checks every input
// passes before an evaluator reads its bytes. The evaluators live in fold_arithmetic.cpp,
// fold_shape.cpp, fold_index.cpp and fold_data.cpp, their shared helpers in fold_eval.h.
#include "onnx/fold.h"

#include <algorithm>

#include "onnx/fold_eval.h"

namespace vkgraph::fold {

int64_t Attrs::get_int(const std::string& name, int64_t fallback) const {
  auto it = ints.find(name);
  return it == ints.end() ? fallback : it->second;
}

const std::vector<int64_t>* Attrs::find_ints(const std::string& name) const {
  auto it = int_lists.find(name);
  return it == int_lists.end() ? nullptr : &it->second;
}

const HostTensor* Attrs::find_tensor(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

void Attrs::ignore(const std::string& name) const {
  ignored_.insert(name);
}

std::vector<std::string> Attrs::unread() const {
  std::vector<std::string> names;
  ints.add_unread(names);
  int_lists.add_unread(names);
  floats.add_unread(names);
  float_lists.add_unread(names);
  strings.add_unread(names);
  tensors.add_unread(names);
  names.insert(names.end(), other_types.begin(), other_types.end());
  std::erase_if(names, [&](const std::string& n) { return ignored_.count(n) > 0; });
  std::sort(names.begin(), names.end());
  return names;
}

void Attrs::forget_reads() const {
  ints.forget_reads();
  int_lists.forget_reads();
  floats.forget_reads();
  float_lists.forget_reads();
  strings.forget_reads();
  tensors.forget_reads();
  ignored_.clear();
}

namespace {

const detail::EvaluatorTable& evaluators() {
  static const detail::EvaluatorTable table = [] {
    detail::EvaluatorTable t;
    detail::add_arithmetic_evaluators(t);
    detail::add_shape_evaluators(t);
    detail::add_index_evaluators(t);
    return t;
  }();
  return table;
}

const detail::MultiEvaluatorTable& multi_evaluators() {
  static const detail::MultiEvaluatorTable table = [] {
    detail::MultiEvaluatorTable t;
    detail::add_data_dependent_evaluators(t);
    return t;
  }();
  return table;
}

}  // namespace

bool can_fold(const std::string& op_type) {
  return evaluators().count(op_type) > 0 || multi_evaluators().count(op_type) > 0;
}

std::vector<HostTensor> evaluate(const std::string& op_type, const Attrs& attrs,
                                 const std::vector<const HostTensor*>& inputs, int opset) {
  check(can_fold(op_type), ErrorKind::Unsupported,
        op_type + ": no constant-folding evaluator for this op");
  // Evaluators index raw bytes by shape; a tensor whose bytes disagree would be read out of
  // bounds, so reject it here once. Shape and Size never read bytes: their input may be a
  // shape-only placeholder (empty bytes), which is how a runtime tensor's static shape folds.
  const bool shape_only = op_type == "Shape" || op_type == "Size";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor* t = inputs[i];
    if (!t) continue;
    bool consistent = false;
    try {
      const int64_t count = t->numel();
      const size_t elem = dtype_size(t->dtype);
      consistent = (shape_only && t->bytes.empty()) ||
                   (static_cast<uint64_t>(count) <= t->bytes.size() / elem &&
                    static_cast<size_t>(count) * elem == t->bytes.size());
    } catch (const Error&) {
      // numel threw: negative or overflowing dims, reported below
    }
    check(consistent, ErrorKind::InvalidArgument,
          op_type + ": input " + std::to_string(i) + " (" + dtype_name(t->dtype) + " " +
              shape_str(t->shape) + ") holds " + std::to_string(t->bytes.size()) + " bytes");
  }
  const detail::Node node(op_type, attrs, inputs, opset);
  if (const auto multi = multi_evaluators().find(op_type); multi != multi_evaluators().end())
    return multi->second(node);
  return {evaluators().at(op_type)(node)};
}

}  // namespace vkgraph::fold
