#include "onnx/fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

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

namespace {

// ---------------------------------------------------------------------------------------------
// Element access. Every evaluator reads elements as int64 or double (whichever is exact for the
// dtype) and writes them back through these helpers, so one code path serves all dtypes.

bool is_float(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16;
}

// Rounds to float; out-of-range values become +-infinity (a plain cast would be undefined).
float to_f32(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<float>::infinity();
  if (v < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

// Float -> integer truncating toward zero like a C cast, but saturating at the dtype's range
// and mapping NaN to 0 where a plain cast would be undefined behaviour.
int64_t float_to_int(double v, DType dtype) {
  if (std::isnan(v)) return 0;
  const double lo = dtype == DType::Int32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = dtype == DType::Int32 ? 2147483648.0 : 9223372036854775808.0;
  if (v <= lo)
    return dtype == DType::Int32 ? std::numeric_limits<int32_t>::min()
                                 : std::numeric_limits<int64_t>::min();
  if (v >= hi)
    return dtype == DType::Int32 ? std::numeric_limits<int32_t>::max()
                                 : std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}

// Integer results narrow to Int32 with two's-complement wrap-around, as ONNX runtimes do.
void store_int(HostTensor& t, int64_t i, int64_t v) {
  switch (t.dtype) {
    case DType::Float32:
      t.data<float>()[i] = static_cast<float>(v);
      break;
    case DType::Float16:
      t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v));
      break;
    case DType::Int32:
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::Int64:
      t.data<int64_t>()[i] = v;
      break;
    case DType::Bool:
      t.data<uint8_t>()[i] = v != 0;
      break;
  }
}

void store_double(HostTensor& t, int64_t i, double v) {
  switch (t.dtype) {
    case DType::Float32:
      t.data<float>()[i] = to_f32(v);
      break;
    case DType::Float16:
      t.data<uint16_t>()[i] = float_to_half(to_f32(v));
      break;
    case DType::Int32:
    case DType::Int64:
      store_int(t, i, float_to_int(v, t.dtype));
      break;
    case DType::Bool:
      t.data<uint8_t>()[i] = v != 0;  // NaN counts as true, like NumPy's astype(bool)
      break;
  }
}

// Copies element `from` of `src` to element `to` of `dst` (same dtype).
void copy_element(const HostTensor& src, int64_t from, HostTensor& dst, int64_t to) {
  const size_t elem = dtype_size(src.dtype);
  std::memcpy(dst.bytes.data() + to * elem, src.bytes.data() + from * elem, elem);
}

// Signed overflow is undefined in C++; ONNX integer arithmetic wraps, so go through uint64.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// ---------------------------------------------------------------------------------------------
// Index walking.

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

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

// Strides that read `in` at each index of the broadcast shape `out` (0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const std::vector<int64_t> contiguous = contiguous_strides(in);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) strides[lead + d] = in[d] == 1 ? 0 : contiguous[d];
  return strides;
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

  // A zero-filled output; refuses shapes that are invalid or too large to fold.
  HostTensor output(DType dtype, const Shape& shape) const {
    int64_t count = 0;
    try {
      count = numel(shape);
    } catch (const Error&) {
      fail("invalid output shape " + shape_str(shape));
    }
    if (count > kMaxFoldElements) {
      fail("output " + shape_str(shape) + " has more than " + std::to_string(kMaxFoldElements) +
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
  int64_t axis(int64_t axis, int64_t rank) const {
    require(axis >= -rank && axis < rank,
            "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    return axis < 0 ? axis + rank : axis;
  }

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

  Shape broadcast(const std::vector<const Shape*>& shapes) const {
    size_t rank = 0;
    for (const Shape* s : shapes) rank = std::max(rank, s->size());
    Shape out(rank, 1);
    for (const Shape* s : shapes) {
      const size_t lead = rank - s->size();
      for (size_t d = 0; d < s->size(); ++d) {
        const int64_t dim = (*s)[d];
        int64_t& o = out[lead + d];
        if (dim == o || dim == 1) continue;
        require(o == 1, "shapes cannot be broadcast: " + shapes_str(shapes));
        o = dim;
      }
    }
    return out;
  }

 private:
  static std::string shapes_str(const std::vector<const Shape*>& shapes) {
    std::string s;
    for (const Shape* shape : shapes) s += (s.empty() ? "" : " vs ") + shape_str(*shape);
    return s;
  }

  const std::vector<const HostTensor*>& inputs_;
};

// Output element i is input element base + sum_d index[d] * strides[d]. Slice, Transpose,
// Expand and Tile are all this copy.
HostTensor strided_copy(const Node& n, const HostTensor& in, const Shape& out_shape,
                        const std::vector<int64_t>& strides, int64_t base) {
  HostTensor out = n.output(in.dtype, out_shape);
  walk(out_shape, {strides}, {base},
       [&](int64_t i, const std::vector<int64_t>& off) { copy_element(in, off[0], out, i); });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Elementwise ops.

enum class Bin {
  Add,
  Sub,
  Mul,
  Div,
  Min,
  Max,
  Equal,
  Less,
  Greater,
  LessOrEqual,
  GreaterOrEqual,
  And,
  Or,
  Xor
};

bool is_comparison(Bin op) {
  return op == Bin::Equal || op == Bin::Less || op == Bin::Greater || op == Bin::LessOrEqual ||
         op == Bin::GreaterOrEqual;
}
bool is_logical(Bin op) {
  return op == Bin::And || op == Bin::Or || op == Bin::Xor;
}

HostTensor binary(const Node& n, Bin op, const HostTensor& a, const HostTensor& b) {
  n.require(a.dtype == b.dtype, std::string("input dtypes differ: ") + dtype_name(a.dtype) +
                                    " vs " + dtype_name(b.dtype));
  if (is_logical(op)) {
    n.require(a.dtype == DType::Bool, std::string("needs bool inputs, got ") + dtype_name(a.dtype));
  } else if (op != Bin::Equal) {
    n.require(a.dtype != DType::Bool, "does not accept bool inputs");
  }
  const Shape shape = n.broadcast({&a.shape, &b.shape});
  const bool to_bool = is_comparison(op) || is_logical(op);
  HostTensor out = n.output(to_bool ? DType::Bool : a.dtype, shape);
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape, shape),
                                                     broadcast_strides(b.shape, shape)};

  if (is_float(a.dtype)) {
    walk(shape, strides, {0, 0}, [&](int64_t i, const std::vector<int64_t>& off) {
      const double x = a.as_double(off[0]), y = b.as_double(off[1]);
      switch (op) {
        case Bin::Add:
          return store_double(out, i, x + y);
        case Bin::Sub:
          return store_double(out, i, x - y);
        case Bin::Mul:
          return store_double(out, i, x * y);
        case Bin::Div:
          return store_double(out, i, x / y);
        // NaN propagates, as in NumPy's minimum/maximum.
        case Bin::Min:
          return store_double(out, i, std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y));
        case Bin::Max:
          return store_double(out, i, std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y));
        case Bin::Equal:
          return store_int(out, i, x == y);
        case Bin::Less:
          return store_int(out, i, x < y);
        case Bin::Greater:
          return store_int(out, i, x > y);
        case Bin::LessOrEqual:
          return store_int(out, i, x <= y);
        case Bin::GreaterOrEqual:
          return store_int(out, i, x >= y);
        default:
          n.fail("unreachable");
      }
    });
    return out;
  }
  walk(shape, strides, {0, 0}, [&](int64_t i, const std::vector<int64_t>& off) {
    const int64_t x = a.as_int(off[0]), y = b.as_int(off[1]);
    switch (op) {
      case Bin::Add:
        return store_int(out, i, wrap_add(x, y));
      case Bin::Sub:
        return store_int(out, i, wrap_sub(x, y));
      case Bin::Mul:
        return store_int(out, i, wrap_mul(x, y));
      case Bin::Div:
        // Truncates toward zero (C semantics), as ONNX Runtime does and as the later ONNX
        // reference implementation (NumPy true divide, then astype) does; the 1.12 test data
        // has no negative integer case. INT_MIN / -1 wraps instead of trapping.
        n.require(y != 0, "integer division by zero");
        return store_int(out, i, y == -1 ? wrap_sub(0, x) : x / y);
      case Bin::Min:
        return store_int(out, i, std::min(x, y));
      case Bin::Max:
        return store_int(out, i, std::max(x, y));
      case Bin::Equal:
        return store_int(out, i, x == y);
      case Bin::Less:
        return store_int(out, i, x < y);
      case Bin::Greater:
        return store_int(out, i, x > y);
      case Bin::LessOrEqual:
        return store_int(out, i, x <= y);
      case Bin::GreaterOrEqual:
        return store_int(out, i, x >= y);
      case Bin::And:
        return store_int(out, i, x && y);
      case Bin::Or:
        return store_int(out, i, x || y);
      case Bin::Xor:
        return store_int(out, i, (x != 0) != (y != 0));
    }
  });
  return out;
}

HostTensor eval_binary(const Node& n, Bin op) {
  return binary(n, op, n.in(0), n.in(1));
}

// Min and Max take one or more inputs, broadcast together.
HostTensor eval_variadic(const Node& n, Bin op) {
  n.require(n.num_inputs() >= 1, "needs at least one input");
  HostTensor result = n.in(0);
  if (result.dtype == DType::Bool) n.fail("does not accept bool inputs");
  for (size_t i = 1; i < n.num_inputs(); ++i) result = binary(n, op, result, n.in(i));
  return result;
}

enum class Un { Neg, Abs, Floor, Ceil, Sqrt, Not };

HostTensor eval_unary(const Node& n, Un op) {
  const HostTensor& x = n.in(0);
  if (op == Un::Not) {
    n.require(x.dtype == DType::Bool, std::string("needs bool input, got ") + dtype_name(x.dtype));
  } else if (op == Un::Neg || op == Un::Abs) {
    n.require(x.dtype != DType::Bool, "does not accept bool input");
  } else {
    n.require(is_float(x.dtype), std::string("needs a float input, got ") + dtype_name(x.dtype));
  }
  HostTensor out = n.output(x.dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_float(x.dtype)) {
      const double v = x.as_double(i);
      switch (op) {
        case Un::Neg:
          store_double(out, i, -v);
          break;
        case Un::Abs:
          store_double(out, i, std::fabs(v));
          break;
        case Un::Floor:
          store_double(out, i, std::floor(v));
          break;
        case Un::Ceil:
          store_double(out, i, std::ceil(v));
          break;
        case Un::Sqrt:
          store_double(out, i, std::sqrt(v));
          break;
        case Un::Not:
          break;
      }
    } else {
      const int64_t v = x.as_int(i);
      switch (op) {
        case Un::Neg:
          store_int(out, i, wrap_sub(0, v));
          break;  // -INT_MIN wraps to INT_MIN
        case Un::Abs:
          store_int(out, i, v < 0 ? wrap_sub(0, v) : v);
          break;
        case Un::Not:
          store_int(out, i, !v);
          break;
        default:
          break;
      }
    }
  }
  return out;
}

HostTensor eval_where(const Node& n) {
  const HostTensor &cond = n.in(0), &x = n.in(1), &y = n.in(2);
  n.require(cond.dtype == DType::Bool, "condition must be bool");
  n.require(x.dtype == y.dtype, std::string("X and Y dtypes differ: ") + dtype_name(x.dtype) +
                                    " vs " + dtype_name(y.dtype));
  const Shape shape = n.broadcast({&cond.shape, &x.shape, &y.shape});
  HostTensor out = n.output(x.dtype, shape);
  walk(shape,
       {broadcast_strides(cond.shape, shape), broadcast_strides(x.shape, shape),
        broadcast_strides(y.shape, shape)},
       {0, 0, 0}, [&](int64_t i, const std::vector<int64_t>& off) {
         if (cond.data<uint8_t>()[off[0]]) {
           copy_element(x, off[1], out, i);
         } else {
           copy_element(y, off[2], out, i);
         }
       });
  return out;
}

HostTensor cast_to(const Node& n, const HostTensor& x, DType to) {
  HostTensor out = n.output(to, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_float(x.dtype)) {
      store_double(out, i, x.as_double(i));
    } else {
      store_int(out, i, x.as_int(i));
    }
  }
  return out;
}

HostTensor eval_cast(const Node& n) {
  auto it = n.attrs.ints.find("to");
  if (it == n.attrs.ints.end()) n.fail("missing attribute 'to'");
  DType to;
  try {
    to = onnx_io::dtype_from_onnx(static_cast<int32_t>(it->second));
  } catch (const Error&) {
    n.fail("target type " + onnx_io::onnx_type_name(static_cast<int32_t>(it->second)) +
               " is not supported",
           ErrorKind::Unsupported);
  }
  return cast_to(n, n.in(0), to);
}

// ---------------------------------------------------------------------------------------------
// Shape ops.

HostTensor eval_shape(const Node& n) {
  const Shape& shape = n.in(0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  // Opset 15 start/end: negative counts from the back, then both clamp to [0, rank].
  auto clamp_index = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp_index(n.attrs.get_int("start", 0));
  const int64_t end = clamp_index(n.attrs.get_int("end", rank));
  const int64_t count = std::max<int64_t>(end - start, 0);
  HostTensor out = n.output(DType::Int64, {count});
  for (int64_t i = 0; i < count; ++i) out.data<int64_t>()[i] = shape[start + i];
  return out;
}

HostTensor eval_size(const Node& n) {
  HostTensor out = n.output(DType::Int64, {});
  out.data<int64_t>()[0] = n.in(0).numel();
  return out;
}

HostTensor eval_reshape(const Node& n) {
  const HostTensor& x = n.in(0);
  std::vector<int64_t> target;
  n.require(n.ints_from_input_or_attr(1, "shape", "shape", &target), "missing shape");
  const bool allow_zero = n.attrs.get_int("allowzero", 0) != 0;
  Shape shape;
  int64_t infer = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t v = target[i];
    if (v == 0 && !allow_zero) {
      // 0 copies the input dimension at the same position.
      n.require(i < x.shape.size(), "shape entry " + std::to_string(i) +
                                        " is 0 but the input has rank " +
                                        std::to_string(x.shape.size()));
      v = x.shape[i];
    } else if (v == -1) {
      n.require(infer < 0, "more than one -1 in shape");
      infer = static_cast<int64_t>(i);
      v = 1;
    } else {
      n.require(v >= 0, "invalid shape entry " + std::to_string(v));
      has_zero |= v == 0;
    }
    shape.push_back(v);
  }
  const int64_t count = x.numel();
  if (infer >= 0) {
    n.require(!has_zero, "shape " + shape_str(target) + " has both -1 and 0 with allowzero");
    int64_t known = 0;
    try {
      known = numel(shape);
    } catch (const Error&) {
      n.fail("invalid shape " + shape_str(target));
    }
    n.require(known > 0 && count % known == 0,
              "cannot infer -1: " + std::to_string(count) + " elements into " + shape_str(target));
    shape[infer] = count / known;
  }
  HostTensor out = n.output(x.dtype, shape);
  n.require(out.numel() == count,
            "cannot reshape " + shape_str(x.shape) + " to " + shape_str(shape));
  out.bytes = x.bytes;
  return out;
}

HostTensor eval_unsqueeze(const Node& n) {
  const HostTensor& x = n.in(0);
  std::vector<int64_t> raw;
  n.require(n.ints_from_input_or_attr(1, "axes", "axes", &raw), "missing axes");
  const int64_t rank = static_cast<int64_t>(x.shape.size() + raw.size());
  std::vector<int64_t> axes = n.axes(raw, rank);
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
      shape.push_back(1);
    } else {
      shape.push_back(x.shape[next++]);
    }
  }
  HostTensor out = x;
  out.shape = shape;
  return out;
}

HostTensor eval_squeeze(const Node& n) {
  const HostTensor& x = n.in(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> raw;
  const bool given = n.ints_from_input_or_attr(1, "axes", "axes", &raw);
  std::vector<int64_t> axes = n.axes(raw, rank);
  if (!given) {
    for (int64_t d = 0; d < rank; ++d) {
      if (x.shape[d] == 1) axes.push_back(d);
    }
  }
  Shape shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      shape.push_back(x.shape[d]);
    } else {
      n.require(x.shape[d] == 1,
                "cannot squeeze axis " + std::to_string(d) + " of shape " + shape_str(x.shape));
    }
  }
  HostTensor out = x;
  out.shape = shape;
  return out;
}

HostTensor eval_expand(const Node& n) {
  const HostTensor& x = n.in(0);
  const Shape target = n.int_values(n.in(1), "shape");
  for (int64_t d : target) n.require(d >= 0, "negative dimension in shape " + shape_str(target));
  const Shape shape = n.broadcast({&x.shape, &target});
  return strided_copy(n, x, shape, broadcast_strides(x.shape, shape), 0);
}

HostTensor eval_constant_of_shape(const Node& n) {
  const Shape shape = n.int_values(n.in(0), "shape");
  for (int64_t d : shape) n.require(d >= 0, "negative dimension in shape " + shape_str(shape));
  HostTensor value(DType::Float32, {1});  // the default: a float 0
  if (const HostTensor* t = n.attrs.find_tensor("value")) {
    n.require(t->numel() == 1, "value must have one element, got shape " + shape_str(t->shape));
    value = *t;
  }
  HostTensor out = n.output(value.dtype, shape);
  for (int64_t i = 0; i < out.numel(); ++i) copy_element(value, 0, out, i);
  return out;
}

HostTensor eval_range(const Node& n) {
  const HostTensor &start = n.scalar(0, "start"), &limit = n.scalar(1, "limit"),
                   &delta = n.scalar(2, "delta");
  n.require(start.dtype == limit.dtype && start.dtype == delta.dtype,
            "start, limit and delta must have the same dtype");
  n.require(start.dtype != DType::Bool, "does not accept bool inputs");
  if (is_float(start.dtype)) {
    const double s = start.as_double(0), l = limit.as_double(0), d = delta.as_double(0);
    n.require(d != 0 && std::isfinite(s) && std::isfinite(l) && std::isfinite(d),
              "start, limit and delta must be finite and delta non-zero");
    const double count = std::max(std::ceil((l - s) / d), 0.0);
    if (count > static_cast<double>(kMaxFoldElements)) {
      n.fail("output too large to fold", ErrorKind::Unsupported);
    }
    HostTensor out = n.output(start.dtype, {static_cast<int64_t>(count)});
    for (int64_t i = 0; i < out.numel(); ++i) store_double(out, i, s + static_cast<double>(i) * d);
    return out;
  }
  const int64_t s = start.as_int(0), l = limit.as_int(0), d = delta.as_int(0);
  n.require(d != 0, "delta must be non-zero");
  // count = ceil((l - s) / d), computed in uint64 so no step can overflow.
  uint64_t count = 0;
  if ((d > 0 && l > s) || (d < 0 && l < s)) {
    const uint64_t span = d > 0 ? static_cast<uint64_t>(l) - static_cast<uint64_t>(s)
                                : static_cast<uint64_t>(s) - static_cast<uint64_t>(l);
    const uint64_t step = d > 0 ? static_cast<uint64_t>(d) : 0 - static_cast<uint64_t>(d);
    count = span / step + (span % step != 0);
  }
  if (count > static_cast<uint64_t>(kMaxFoldElements)) {
    n.fail("output too large to fold", ErrorKind::Unsupported);
  }
  HostTensor out = n.output(start.dtype, {static_cast<int64_t>(count)});
  // Every value lies between s and l, so the wrapping arithmetic yields the exact value.
  for (int64_t i = 0; i < out.numel(); ++i) store_int(out, i, wrap_add(s, wrap_mul(i, d)));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Data movement.

HostTensor eval_gather(const Node& n) {
  const HostTensor& data = n.in(0);
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  n.require(rank >= 1, "data must have rank >= 1");
  const int64_t axis = n.axis(n.attrs.get_int("axis", 0), rank);
  const HostTensor& index_tensor = n.in(1);
  std::vector<int64_t> indices = n.int_values(index_tensor, "indices");
  const int64_t dim = data.shape[axis];
  for (int64_t& k : indices) {
    n.require(k >= -dim && k < dim, "index " + std::to_string(k) + " out of range for axis " +
                                        std::to_string(axis) + " of size " + std::to_string(dim));
    if (k < 0) k += dim;
  }
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), index_tensor.shape.begin(), index_tensor.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  HostTensor out = n.output(data.dtype, shape);

  // View data as [outer, dim, inner] and out as [outer, indices, inner].
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[d];
  const size_t block = static_cast<size_t>(inner) * dtype_size(data.dtype);
  const int64_t count = static_cast<int64_t>(indices.size());
  if (block == 0) return out;  // nothing to copy (and memcpy must not see null pointers)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      std::memcpy(out.bytes.data() + (o * count + j) * block,
                  data.bytes.data() + (o * dim + indices[j]) * block, block);
    }
  }
  return out;
}

HostTensor eval_slice(const Node& n) {
  const HostTensor& x = n.in(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  n.require(n.ints_from_input_or_attr(1, "starts", "starts", &starts), "missing starts");
  n.require(n.ints_from_input_or_attr(2, "ends", "ends", &ends), "missing ends");
  n.require(starts.size() == ends.size(), "starts and ends differ in length");
  if (!n.ints_from_input_or_attr(3, "axes", "axes", &axes)) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (const HostTensor* t = n.opt(4)) {
    steps = n.int_values(*t, "steps");
  } else {
    steps.assign(starts.size(), 1);
  }
  n.require(axes.size() == starts.size() && steps.size() == starts.size(),
            "starts, ends, axes and steps differ in length");
  axes = n.axes(axes, rank);

  Shape shape = x.shape;
  std::vector<int64_t> first(rank, 0), step(rank, 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k], dim = x.shape[a], st = steps[k];
    n.require(st != 0, "step must be non-zero");
    // ONNX Slice: negative values count from the end, then clamp. A positive step clamps
    // start and end to [0, dim]; a negative step clamps start to [0, dim-1] and end to
    // [-1, dim-1], so that end -1 means "through index 0".
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    uint64_t span = 0;
    if (dim > 0) {
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        span = e > s ? static_cast<uint64_t>(e - s) : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        span = s > e ? static_cast<uint64_t>(s - e) : 0;
      }
    }
    const uint64_t magnitude = st > 0 ? static_cast<uint64_t>(st) : 0 - static_cast<uint64_t>(st);
    const int64_t count = static_cast<int64_t>(span / magnitude + (span % magnitude != 0));
    shape[a] = count;
    first[a] = count > 0 ? s : 0;
    // With one element or none the step is never taken; 1 avoids overflowing the stride.
    step[a] = count > 1 ? st : 1;
  }
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape);
  std::vector<int64_t> strides(rank);
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    strides[d] = in_strides[d] * step[d];
    base += first[d] * in_strides[d];
  }
  return strided_copy(n, x, shape, strides, base);
}

HostTensor eval_concat(const Node& n) {
  n.require(n.num_inputs() >= 1, "needs at least one input");
  const HostTensor& first = n.in(0);
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  n.require(rank >= 1, "inputs must have rank >= 1");
  auto it = n.attrs.ints.find("axis");
  if (it == n.attrs.ints.end()) n.fail("missing attribute 'axis'");
  const int64_t axis = n.axis(it->second, rank);
  Shape shape = first.shape;
  shape[axis] = 0;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    const HostTensor& t = n.in(i);
    n.require(t.dtype == first.dtype, "inputs have different dtypes");
    bool compatible = t.shape.size() == first.shape.size();
    for (int64_t d = 0; compatible && d < rank; ++d) {
      compatible = d == axis || t.shape[d] == first.shape[d];
    }
    n.require(compatible, "input shapes " + shape_str(first.shape) + " and " + shape_str(t.shape) +
                              " differ outside axis " + std::to_string(axis));
    shape[axis] += t.shape[axis];
  }
  HostTensor out = n.output(first.dtype, shape);
  // View each input as [outer, chunk]; the output interleaves the chunks.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  if (outer == 0) return out;
  size_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < n.num_inputs(); ++i) {
      const HostTensor& t = n.in(i);
      const size_t chunk = t.nbytes() / static_cast<size_t>(outer);
      if (chunk == 0) continue;  // empty input; its data() may be null
      std::memcpy(out.bytes.data() + pos, t.bytes.data() + o * chunk, chunk);
      pos += chunk;
    }
  }
  return out;
}

HostTensor eval_transpose(const Node& n) {
  const HostTensor& x = n.in(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> perm;
  if (const std::vector<int64_t>* p = n.attrs.find_ints("perm")) {
    perm = *p;
  } else {
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);  // default: reverse the dims
  }
  n.require(static_cast<int64_t>(perm.size()) == rank, "perm length differs from the input rank");
  perm = n.axes(perm, rank);  // validates it is a permutation
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape);
  Shape shape(rank);
  std::vector<int64_t> strides(rank);
  for (int64_t d = 0; d < rank; ++d) {
    shape[d] = x.shape[perm[d]];
    strides[d] = in_strides[perm[d]];
  }
  return strided_copy(n, x, shape, strides, 0);
}

HostTensor eval_tile(const Node& n) {
  const HostTensor& x = n.in(0);
  const std::vector<int64_t> repeats = n.int_values(n.in(1), "repeats");
  n.require(repeats.size() == x.shape.size(), "repeats length differs from the input rank");
  // Tiling is a strided copy into the interleaved shape [r0, d0, r1, d1, ...] where the
  // repeat dimensions have stride 0; merging each pair gives the output shape.
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape);
  Shape interleaved, shape;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < repeats.size(); ++d) {
    n.require(repeats[d] >= 0, "negative repeat " + std::to_string(repeats[d]));
    interleaved.insert(interleaved.end(), {repeats[d], x.shape[d]});
    strides.insert(strides.end(), {0, in_strides[d]});
  }
  HostTensor out = strided_copy(n, x, interleaved, strides, 0);
  for (size_t d = 0; d < repeats.size(); ++d) shape.push_back(repeats[d] * x.shape[d]);
  out.shape = shape;
  return out;
}

HostTensor eval_nonzero(const Node& n) {
  const HostTensor& x = n.in(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_float(x.dtype) ? x.as_double(i) != 0 : x.as_int(i) != 0) hits.push_back(i);
  }
  const int64_t count = static_cast<int64_t>(hits.size());
  HostTensor out = n.output(DType::Int64, {rank, count});
  // Row d holds the d-th coordinate of every hit.
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = hits[j];
    for (int64_t d = rank; d-- > 0;) {
      out.data<int64_t>()[d * count + j] = rest % x.shape[d];
      rest /= x.shape[d];
    }
  }
  return out;
}

HostTensor eval_reduce(const Node& n, bool product) {
  const HostTensor& x = n.in(0);
  n.require(x.dtype != DType::Bool, "does not accept bool input");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> raw;
  n.ints_from_input_or_attr(1, "axes", "axes", &raw);
  if (raw.empty()) {
    if (n.attrs.get_int("noop_with_empty_axes", 0)) return x;
    for (int64_t d = 0; d < rank; ++d) raw.push_back(d);
  }
  const std::vector<int64_t> axes = n.axes(raw, rank);
  const bool keepdims = n.attrs.get_int("keepdims", 1) != 0;

  Shape kept = x.shape;  // the output shape with reduced dims kept as 1
  for (int64_t a : axes) kept[a] = 1;
  // Walking the input with these strides lands on the output element each input adds into.
  std::vector<int64_t> strides = contiguous_strides(kept);
  for (int64_t a : axes) strides[a] = 0;
  Shape shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (keepdims || std::find(axes.begin(), axes.end(), d) == axes.end()) {
      shape.push_back(kept[d]);
    }
  }
  HostTensor out = n.output(x.dtype, shape);
  const size_t count = static_cast<size_t>(out.numel());
  if (is_float(x.dtype)) {
    std::vector<double> acc(count, product ? 1.0 : 0.0);
    walk(x.shape, {strides}, {0}, [&](int64_t i, const std::vector<int64_t>& off) {
      acc[off[0]] = product ? acc[off[0]] * x.as_double(i) : acc[off[0]] + x.as_double(i);
    });
    for (size_t i = 0; i < count; ++i) store_double(out, static_cast<int64_t>(i), acc[i]);
  } else {
    std::vector<int64_t> acc(count, product ? 1 : 0);
    walk(x.shape, {strides}, {0}, [&](int64_t i, const std::vector<int64_t>& off) {
      acc[off[0]] =
          product ? wrap_mul(acc[off[0]], x.as_int(i)) : wrap_add(acc[off[0]], x.as_int(i));
    });
    for (size_t i = 0; i < count; ++i) store_int(out, static_cast<int64_t>(i), acc[i]);
  }
  return out;
}

HostTensor eval_constant(const Node& n) {
  const Attrs& a = n.attrs;
  if (const HostTensor* t = a.find_tensor("value")) return *t;
  if (auto it = a.floats.find("value_float"); it != a.floats.end()) {
    return HostTensor::from(DType::Float32, {}, std::vector<float>{it->second});
  }
  if (auto it = a.float_lists.find("value_floats"); it != a.float_lists.end()) {
    return HostTensor::from(DType::Float32, {static_cast<int64_t>(it->second.size())}, it->second);
  }
  if (auto it = a.ints.find("value_int"); it != a.ints.end()) {
    return HostTensor::from(DType::Int64, {}, std::vector<int64_t>{it->second});
  }
  if (const std::vector<int64_t>* v = a.find_ints("value_ints")) {
    return HostTensor::from(DType::Int64, {static_cast<int64_t>(v->size())}, *v);
  }
  n.fail("only value, value_float(s) and value_int(s) are supported", ErrorKind::Unsupported);
}

using Evaluator = HostTensor (*)(const Node&);

const std::unordered_map<std::string, Evaluator>& evaluators() {
  static const std::unordered_map<std::string, Evaluator> table = {
      {"Shape", eval_shape},
      {"Size", eval_size},
      {"Gather", eval_gather},
      {"Slice", eval_slice},
      {"Concat", eval_concat},
      {"Unsqueeze", eval_unsqueeze},
      {"Squeeze", eval_squeeze},
      {"Cast", eval_cast},
      {"CastLike", [](const Node& n) { return cast_to(n, n.in(0), n.in(1).dtype); }},
      {"Range", eval_range},
      {"ConstantOfShape", eval_constant_of_shape},
      {"Constant", eval_constant},
      {"Reshape", eval_reshape},
      {"Expand", eval_expand},
      {"Identity", [](const Node& n) { return n.in(0); }},
      {"Add", [](const Node& n) { return eval_binary(n, Bin::Add); }},
      {"Sub", [](const Node& n) { return eval_binary(n, Bin::Sub); }},
      {"Mul", [](const Node& n) { return eval_binary(n, Bin::Mul); }},
      {"Div", [](const Node& n) { return eval_binary(n, Bin::Div); }},
      {"Equal", [](const Node& n) { return eval_binary(n, Bin::Equal); }},
      {"Less", [](const Node& n) { return eval_binary(n, Bin::Less); }},
      {"Greater", [](const Node& n) { return eval_binary(n, Bin::Greater); }},
      {"LessOrEqual", [](const Node& n) { return eval_binary(n, Bin::LessOrEqual); }},
      {"GreaterOrEqual", [](const Node& n) { return eval_binary(n, Bin::GreaterOrEqual); }},
      {"And", [](const Node& n) { return eval_binary(n, Bin::And); }},
      {"Or", [](const Node& n) { return eval_binary(n, Bin::Or); }},
      {"Xor", [](const Node& n) { return eval_binary(n, Bin::Xor); }},
      {"Min", [](const Node& n) { return eval_variadic(n, Bin::Min); }},
      {"Max", [](const Node& n) { return eval_variadic(n, Bin::Max); }},
      {"Where", eval_where},
      {"Not", [](const Node& n) { return eval_unary(n, Un::Not); }},
      {"Neg", [](const Node& n) { return eval_unary(n, Un::Neg); }},
      {"Abs", [](const Node& n) { return eval_unary(n, Un::Abs); }},
      {"Floor", [](const Node& n) { return eval_unary(n, Un::Floor); }},
      {"Ceil", [](const Node& n) { return eval_unary(n, Un::Ceil); }},
      {"Sqrt", [](const Node& n) { return eval_unary(n, Un::Sqrt); }},
      {"Transpose", eval_transpose},
      {"ReduceSum", [](const Node& n) { return eval_reduce(n, false); }},
      {"ReduceProd", [](const Node& n) { return eval_reduce(n, true); }},
      {"Tile", eval_tile},
      {"NonZero", eval_nonzero},
  };
  return table;
}

}  // namespace

bool can_fold(const std::string& op_type) {
  return evaluators().count(op_type) > 0;
}

std::vector<HostTensor> evaluate(const std::string& op_type, const Attrs& attrs,
                                 const std::vector<const HostTensor*>& inputs, int opset) {
  const auto it = evaluators().find(op_type);
  check(it != evaluators().end(), ErrorKind::Unsupported,
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
  const Node node(op_type, attrs, inputs, opset);
  return {it->second(node)};
}

}  // namespace vkgraph::fold
