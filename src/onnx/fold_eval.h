#pragma once
// What the constant-folding evaluators share (fold.h is the interface): element access that
// serves every dtype, the strided index walk, and the node being evaluated with its error
// helpers. Internal to fold*.cpp. The shape rules themselves live in core/shape_rules.h, which
// the device ops use too.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/shape_rules.h"
#include "onnx/fold.h"
#include "vkgraph/error.h"

namespace vkgraph::fold::detail {

// ---------------------------------------------------------------------------------------------
// Element access. Every evaluator reads elements as int64 or double (whichever is exact for the
// dtype) and writes them back with HostTensor::set / set_int (types.h says how each dtype
// converts), so one code path serves all dtypes.

inline bool is_float(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16;
}

// Copies element `from` of `src` to element `to` of `dst` (same dtype).
inline void copy_element(const HostTensor& src, int64_t from, HostTensor& dst, int64_t to) {
  const size_t elem = dtype_size(src.dtype);
  std::memcpy(dst.bytes.data() + to * elem, src.bytes.data() + from * elem, elem);
}

// Signed overflow is undefined in C++; ONNX integer arithmetic wraps, so go through uint64.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// ---------------------------------------------------------------------------------------------
// Index walking.

// Visits every index of `shape` in row-major order. For each set k of per-dimension strides
// it keeps offsets[k] = base[k] + sum_d index[d] * strides[k][d] up to date, and calls
// fn(linear_index, offsets). Broadcasting, slicing, transposing and reducing are all this walk
// with different strides.
template <typename Fn>
void walk(const Shape& shape, const std::vector<std::vector<int64_t>>& strides,
          std::vector<int64_t> offsets, Fn&& fn) {
  const int64_t total = numel(shape);
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, offsets);
    for (size_t d = rank; d-- > 0;) {  // odometer increment, last dimension fastest
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < strides.size(); ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The node being evaluated: inputs, attributes and error helpers that prefix the op name.

class Node {
 public:
  Node(const std::string& op, const Attrs& attrs, const std::vector<const HostTensor*>& inputs,
       int opset)
      : op(op), attrs(attrs), opset(opset), inputs_(inputs) {}

  const std::string& op;
  const Attrs& attrs;
  const int opset;

  [[noreturn]] void fail(const std::string& problem,
                         ErrorKind kind = ErrorKind::InvalidArgument) const {
    throw Error(kind, op + ": " + problem);
  }
  void require(bool condition, const std::string& problem) const {
    if (!condition) fail(problem);
  }

  size_t num_inputs() const { return inputs_.size(); }
  // nullptr when the optional input is omitted.
  const HostTensor* opt(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  const HostTensor& in(size_t i) const {
    if (!opt(i)) fail("missing required input " + std::to_string(i));
    return *inputs_[i];
  }

  // A zero-filled output; refuses shapes that are invalid or of more than `limit` elements.
  // The default bounds what a model can make the loader allocate from small inputs (a
  // ConstantOfShape or Expand to billions of elements).
  HostTensor output(DType dtype, const Shape& shape, int64_t limit = kMaxFoldElements) const {
    int64_t count = 0;
    try {
      count = numel(shape);
    } catch (const Error&) {
      fail("invalid output shape " + shape_str(shape));
    }
    if (count > limit) {
      fail("output " + shape_str(shape) + " has more than " + std::to_string(limit) +
               " elements, too large to fold",
           ErrorKind::Unsupported);
    }
    return HostTensor(dtype, shape);
  }

  // The values of an Int32/Int64 tensor (shape vectors, axes, indices).
  std::vector<int64_t> int_values(const HostTensor& t, const char* what) const {
    require(t.dtype == DType::Int64 || t.dtype == DType::Int32,
            std::string(what) + " must be int64 or int32, got " + dtype_name(t.dtype));
    std::vector<int64_t> values(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = t.as_int(static_cast<int64_t>(i));
    return values;
  }

  // A scalar (or one-element) input as int64 / double.
  const HostTensor& scalar(size_t i, const char* what) const {
    const HostTensor& t = in(i);
    require(t.numel() == 1,
            std::string(what) + " must be a scalar, got shape " + shape_str(t.shape));
    return t;
  }

  // Int list from input i when present, else from attribute `name`; false when neither.
  bool ints_from_input_or_attr(size_t i, const std::string& name, const char* what,
                               std::vector<int64_t>* values) const {
    if (const HostTensor* t = opt(i)) {
      *values = int_values(*t, what);
      return true;
    }
    if (const std::vector<int64_t>* list = attrs.find_ints(name)) {
      *values = *list;
      return true;
    }
    return false;
  }

  // Maps axis from [-rank, rank) to [0, rank).
  int64_t axis(int64_t axis, int64_t rank) const { return shapes::normalize_axis(axis, rank, op); }

  // Normalised, duplicate-free axes.
  std::vector<int64_t> axes(const std::vector<int64_t>& raw, int64_t rank) const {
    std::vector<int64_t> result;
    for (int64_t a : raw) {
      const int64_t n = axis(a, rank);
      require(std::find(result.begin(), result.end(), n) == result.end(),
              "duplicate axis " + std::to_string(a));
      result.push_back(n);
    }
    return result;
  }

  Shape broadcast(const std::vector<const Shape*>& inputs) const {
    std::optional<Shape> out = shapes::broadcast(inputs);
    if (!out) fail("shapes cannot be broadcast: " + shapes_str(inputs));
    return *out;
  }

 private:
  static std::string shapes_str(const std::vector<const Shape*>& shapes) {
    std::string s;
    for (const Shape* shape : shapes) s += (s.empty() ? "" : " vs ") + shape_str(*shape);
    return s;
  }

  const std::vector<const HostTensor*>& inputs_;
};

// The output limit of an op whose output rearranges `in`'s elements: kMaxFoldElements, or more
// where `in` is larger. The model holds that much already, so folding it amplifies nothing (a
// large weight transposed for a reader that cannot read it as a view would otherwise be
// transposed on the GPU every call; MatMuls read such a weight in place, fuse.cpp's
// Pass::rewrite).
inline int64_t rearranged_limit(const HostTensor& in) {
  return std::max(kMaxFoldElements, in.numel());
}

// Output element i is input element base + sum_d index[d] * strides[d]. Slice, Transpose,
// Expand and Tile are all this copy.
inline HostTensor strided_copy(const Node& n, const HostTensor& in, const Shape& out_shape,
                               const std::vector<int64_t>& strides, int64_t base) {
  HostTensor out = n.output(in.dtype, out_shape, rearranged_limit(in));
  walk(out_shape, {strides}, {base},
       [&](int64_t i, const std::vector<int64_t>& off) { copy_element(in, off[0], out, i); });
  return out;
}

// Evaluators by ONNX op type; each fold_*.cpp adds its family.
using Evaluator = HostTensor (*)(const Node&);
using EvaluatorTable = std::unordered_map<std::string, Evaluator>;
void add_arithmetic_evaluators(EvaluatorTable& table);  // fold_arithmetic.cpp
void add_shape_evaluators(EvaluatorTable& table);       // fold_shape.cpp
void add_index_evaluators(EvaluatorTable& table);       // fold_index.cpp
// Ops with several outputs.
using MultiEvaluator = std::vector<HostTensor> (*)(const Node&);
using MultiEvaluatorTable = std::unordered_map<std::string, MultiEvaluator>;
void add_data_dependent_evaluators(MultiEvaluatorTable& table);  // fold_data.cpp

}  // namespace vkgraph::fold::detail
