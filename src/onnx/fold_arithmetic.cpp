// Constant folding of arithmetic: elementwise ops with broadcasting, casts and reductions.
// Integers compute in int64 with two's-complement wrap-around, floats in double.
#include "onnx/fold_eval.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::fold::detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Elementwise ops.

enum class Bin {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  FMod,
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

// fmod = 0 takes the divisor's sign, as NumPy's mod (the reference for float inputs).
double floor_mod(double x, double y) {
  const double r = std::fmod(x, y);
  return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

// x^y for integers by squaring, wrapping on overflow; a negative y gives trunc(1 / x^|y|).
int64_t int_pow(const Node& n, int64_t x, int64_t y) {
  if (y < 0) {
    n.require(x != 0, "zero to a negative integer power");
    return x == 1 ? 1 : x == -1 ? (y % 2 == 0 ? 1 : -1) : 0;
  }
  int64_t result = 1;
  for (; y > 0; y >>= 1) {
    if (y & 1) result = wrap_mul(result, x);
    x = wrap_mul(x, x);
  }
  return result;
}

bool is_comparison(Bin op) {
  return op == Bin::Equal || op == Bin::Less || op == Bin::Greater || op == Bin::LessOrEqual ||
         op == Bin::GreaterOrEqual;
}
// The comparisons, alike for float and integer operands (false with a NaN, as in NumPy).
template <class T>
bool compare(Bin op, T x, T y) {
  switch (op) {
    case Bin::Equal:
      return x == y;
    case Bin::Less:
      return x < y;
    case Bin::Greater:
      return x > y;
    case Bin::LessOrEqual:
      return x <= y;
    default:
      return x >= y;  // GreaterOrEqual, the last one is_comparison admits
  }
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
  const std::vector<std::vector<int64_t>> strides = {shapes::broadcast_strides(a.shape, shape),
                                                     shapes::broadcast_strides(b.shape, shape)};

  if (is_float(a.dtype)) {
    walk(shape, strides, {0, 0}, [&](int64_t i, const std::vector<int64_t>& off) {
      const double x = a.as_double(off[0]), y = b.as_double(off[1]);
      if (is_comparison(op)) return out.set_int(i, compare(op, x, y));
      switch (op) {
        case Bin::Add:
          return out.set(i, x + y);
        case Bin::Sub:
          return out.set(i, x - y);
        case Bin::Mul:
          return out.set(i, x * y);
        case Bin::Div:
          return out.set(i, x / y);
        case Bin::FMod:
          return out.set(i, std::fmod(x, y));
        case Bin::Mod:
          return out.set(i, floor_mod(x, y));
        // NaN propagates, as in NumPy's minimum/maximum.
        case Bin::Min:
          return out.set(i, std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y));
        case Bin::Max:
          return out.set(i, std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y));
        default:
          n.fail("unreachable");
      }
    });
    return out;
  }
  walk(shape, strides, {0, 0}, [&](int64_t i, const std::vector<int64_t>& off) {
    const int64_t x = a.as_int(off[0]), y = b.as_int(off[1]);
    if (is_comparison(op)) return out.set_int(i, compare(op, x, y));
    switch (op) {
      case Bin::Add:
        return out.set_int(i, wrap_add(x, y));
      case Bin::Sub:
        return out.set_int(i, wrap_sub(x, y));
      case Bin::Mul:
        return out.set_int(i, wrap_mul(x, y));
      case Bin::Div:
        // Truncates toward zero (C semantics), as ONNX Runtime does and as the later ONNX
        // reference implementation (NumPy true divide, then astype) does; the 1.12 test data
        // has no negative integer case. INT_MIN / -1 wraps instead of trapping.
        n.require(y != 0, "integer division by zero");
        return out.set_int(i, y == -1 ? wrap_sub(0, x) : x / y);
      case Bin::Mod:
      case Bin::FMod: {
        n.require(y != 0, "integer modulo by zero");
        const int64_t r = y == -1 ? 0 : x % y;  // INT_MIN % -1 traps in C++
        // fmod keeps the dividend's sign (C's %); Mod takes the divisor's (Python's %).
        return out.set_int(i, op == Bin::Mod && r != 0 && (r < 0) != (y < 0) ? r + y : r);
      }
      case Bin::Min:
        return out.set_int(i, std::min(x, y));
      case Bin::Max:
        return out.set_int(i, std::max(x, y));
      case Bin::And:
        return out.set_int(i, x && y);
      case Bin::Or:
        return out.set_int(i, x || y);
      case Bin::Xor:
        return out.set_int(i, (x != 0) != (y != 0));
      default:
        n.fail("unreachable");
    }
  });
  return out;
}

HostTensor eval_binary(const Node& n, Bin op) {
  return binary(n, op, n.in(0), n.in(1));
}

HostTensor eval_mod(const Node& n) {
  return eval_binary(n, n.attrs.get_int("fmod", 0) != 0 ? Bin::FMod : Bin::Mod);
}

// Pow's exponent may have another dtype than its base (opset 12); the result has the base's.
// Integer powers are exact (wrapping like the other integer ops); a negative integer exponent
// truncates toward zero as the float result cast to an integer would.
HostTensor eval_pow(const Node& n) {
  const HostTensor &base = n.in(0), &exponent = n.in(1);
  n.require(base.dtype != DType::Bool && exponent.dtype != DType::Bool,
            "does not accept bool inputs");
  const Shape shape = n.broadcast({&base.shape, &exponent.shape});
  HostTensor out = n.output(base.dtype, shape);
  const bool exact = !is_float(base.dtype) && !is_float(exponent.dtype);
  walk(shape,
       {shapes::broadcast_strides(base.shape, shape),
        shapes::broadcast_strides(exponent.shape, shape)},
       {0, 0}, [&](int64_t i, const std::vector<int64_t>& off) {
         if (!exact) {
           const double x = is_float(base.dtype) ? base.as_double(off[0])
                                                 : static_cast<double>(base.as_int(off[0]));
           const double y = is_float(exponent.dtype) ? exponent.as_double(off[1])
                                                     : static_cast<double>(exponent.as_int(off[1]));
           return out.set(i, std::pow(x, y));
         }
         return out.set_int(i, int_pow(n, base.as_int(off[0]), exponent.as_int(off[1])));
       });
  return out;
}

// Min and Max take one or more inputs, broadcast together.
HostTensor eval_variadic(const Node& n, Bin op) {
  n.require(n.num_inputs() >= 1, "needs at least one input");
  HostTensor result = n.in(0);
  if (result.dtype == DType::Bool) n.fail("does not accept bool inputs");
  for (size_t i = 1; i < n.num_inputs(); ++i) result = binary(n, op, result, n.in(i));
  return result;
}

enum class Un { Neg, Abs, Sign, Floor, Ceil, Round, Sqrt, Reciprocal, Exp, Log, Not };

HostTensor eval_unary(const Node& n, Un op) {
  const HostTensor& x = n.in(0);
  if (op == Un::Not) {
    n.require(x.dtype == DType::Bool, std::string("needs bool input, got ") + dtype_name(x.dtype));
  } else if (op == Un::Neg || op == Un::Abs || op == Un::Sign) {
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
          out.set(i, -v);
          break;
        case Un::Abs:
          out.set(i, std::fabs(v));
          break;
        case Un::Floor:
          out.set(i, std::floor(v));
          break;
        case Un::Sign:
          out.set(i, std::isnan(v) ? v : (v > 0) - (v < 0));
          break;
        case Un::Ceil:
          out.set(i, std::ceil(v));
          break;
        case Un::Round:  // half to even, as the default rounding mode does
          out.set(i, std::nearbyint(v));
          break;
        case Un::Sqrt:
          out.set(i, std::sqrt(v));
          break;
        case Un::Reciprocal:
          out.set(i, 1.0 / v);
          break;
        case Un::Exp:
          out.set(i, std::exp(v));
          break;
        case Un::Log:
          out.set(i, std::log(v));
          break;
        case Un::Not:
          break;
      }
    } else {
      const int64_t v = x.as_int(i);
      switch (op) {
        case Un::Neg:
          out.set_int(i, wrap_sub(0, v));
          break;  // -INT_MIN wraps to INT_MIN
        case Un::Abs:
          out.set_int(i, v < 0 ? wrap_sub(0, v) : v);
          break;
        case Un::Sign:
          out.set_int(i, (v > 0) - (v < 0));
          break;
        case Un::Not:
          out.set_int(i, !v);
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
       {shapes::broadcast_strides(cond.shape, shape), shapes::broadcast_strides(x.shape, shape),
        shapes::broadcast_strides(y.shape, shape)},
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
      out.set(i, x.as_double(i));
    } else {
      out.set_int(i, x.as_int(i));
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
  HostTensor out = cast_to(n, n.in(0), to);
  if (it->second == onnx::TensorProto::BFLOAT16) {
    // A bfloat16 value is held in float32, at bfloat16's precision.
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data<float>()[i] =
          onnx_io::bfloat16_to_float(onnx_io::float_to_bfloat16(out.data<float>()[i]));
  }
  return out;
}

enum class Reduce { Sum, Prod, Min, Max };

// One step of a reduction; Min and Max propagate NaN as NumPy does.
double reduce_step(Reduce op, double acc, double v) {
  switch (op) {
    case Reduce::Sum:
      return acc + v;
    case Reduce::Prod:
      return acc * v;
    case Reduce::Min:
      return std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
    case Reduce::Max:
      return std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
  }
  return acc;
}
int64_t reduce_step(Reduce op, int64_t acc, int64_t v) {
  switch (op) {
    case Reduce::Sum:
      return wrap_add(acc, v);
    case Reduce::Prod:
      return wrap_mul(acc, v);
    case Reduce::Min:
      return std::min(acc, v);
    case Reduce::Max:
      return std::max(acc, v);
  }
  return acc;
}

HostTensor eval_reduce(const Node& n, Reduce op) {
  const HostTensor& x = n.in(0);
  n.require(x.dtype != DType::Bool, "does not accept bool input");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> raw;
  n.ints_from_input_or_attr(1, "axes", "axes", &raw);
  const bool keepdims = n.attrs.get_int("keepdims", 1) != 0;  // read even where a no-op
  // Read whether or not axes are given, so the attribute check sees it read.
  const bool noop_if_empty = n.attrs.get_int("noop_with_empty_axes", 0) != 0;
  if (raw.empty()) {
    if (noop_if_empty) return x;
    for (int64_t d = 0; d < rank; ++d) raw.push_back(d);
  }
  const std::vector<int64_t> axes = n.axes(raw, rank);

  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  // Walking the input with these strides lands on the output element each input adds into.
  std::vector<int64_t> strides =
      shapes::contiguous_strides(shapes::reduced_shape(x.shape, reduced, true));
  for (int64_t a : axes) strides[a] = 0;
  HostTensor out = n.output(x.dtype, shapes::reduced_shape(x.shape, reduced, keepdims));
  const size_t count = static_cast<size_t>(out.numel());
  // Min and Max of nothing have no value before opset 18 and a dtype-dependent one after.
  const bool selects = op == Reduce::Min || op == Reduce::Max;
  if (selects && x.numel() == 0 && count > 0)
    n.fail("reducing an empty axis is not folded", ErrorKind::Unsupported);
  // Min and Max start from each output's first element (a repeat of it changes nothing).
  std::vector<bool> started(count, !selects);
  if (is_float(x.dtype)) {
    std::vector<double> acc(count, op == Reduce::Prod ? 1.0 : 0.0);
    walk(x.shape, {strides}, {0}, [&](int64_t i, const std::vector<int64_t>& off) {
      const double v = x.as_double(i);
      acc[off[0]] = started[off[0]] ? reduce_step(op, acc[off[0]], v) : v;
      started[off[0]] = true;
    });
    for (size_t i = 0; i < count; ++i) out.set(static_cast<int64_t>(i), acc[i]);
  } else {
    std::vector<int64_t> acc(count, op == Reduce::Prod ? 1 : 0);
    walk(x.shape, {strides}, {0}, [&](int64_t i, const std::vector<int64_t>& off) {
      const int64_t v = x.as_int(i);
      acc[off[0]] = started[off[0]] ? reduce_step(op, acc[off[0]], v) : v;
      started[off[0]] = true;
    });
    for (size_t i = 0; i < count; ++i) out.set_int(static_cast<int64_t>(i), acc[i]);
  }
  return out;
}

}  // namespace

void add_arithmetic_evaluators(EvaluatorTable& table) {
  table["Cast"] = eval_cast;
  table["CastLike"] = [](const Node& n) { return cast_to(n, n.in(0), n.in(1).dtype); };
  table["Add"] = [](const Node& n) { return eval_binary(n, Bin::Add); };
  table["Sub"] = [](const Node& n) { return eval_binary(n, Bin::Sub); };
  table["Mul"] = [](const Node& n) { return eval_binary(n, Bin::Mul); };
  table["Div"] = [](const Node& n) { return eval_binary(n, Bin::Div); };
  table["Mod"] = eval_mod;
  table["Pow"] = eval_pow;
  table["Equal"] = [](const Node& n) { return eval_binary(n, Bin::Equal); };
  table["Less"] = [](const Node& n) { return eval_binary(n, Bin::Less); };
  table["Greater"] = [](const Node& n) { return eval_binary(n, Bin::Greater); };
  table["LessOrEqual"] = [](const Node& n) { return eval_binary(n, Bin::LessOrEqual); };
  table["GreaterOrEqual"] = [](const Node& n) { return eval_binary(n, Bin::GreaterOrEqual); };
  table["And"] = [](const Node& n) { return eval_binary(n, Bin::And); };
  table["Or"] = [](const Node& n) { return eval_binary(n, Bin::Or); };
  table["Xor"] = [](const Node& n) { return eval_binary(n, Bin::Xor); };
  table["Min"] = [](const Node& n) { return eval_variadic(n, Bin::Min); };
  table["Max"] = [](const Node& n) { return eval_variadic(n, Bin::Max); };
  table["Where"] = eval_where;
  table["Not"] = [](const Node& n) { return eval_unary(n, Un::Not); };
  table["Neg"] = [](const Node& n) { return eval_unary(n, Un::Neg); };
  table["Abs"] = [](const Node& n) { return eval_unary(n, Un::Abs); };
  table["Floor"] = [](const Node& n) { return eval_unary(n, Un::Floor); };
  table["Ceil"] = [](const Node& n) { return eval_unary(n, Un::Ceil); };
  table["Sqrt"] = [](const Node& n) { return eval_unary(n, Un::Sqrt); };
  table["Sign"] = [](const Node& n) { return eval_unary(n, Un::Sign); };
  table["Round"] = [](const Node& n) { return eval_unary(n, Un::Round); };
  table["Reciprocal"] = [](const Node& n) { return eval_unary(n, Un::Reciprocal); };
  table["Exp"] = [](const Node& n) { return eval_unary(n, Un::Exp); };
  table["Log"] = [](const Node& n) { return eval_unary(n, Un::Log); };
  table["ReduceSum"] = [](const Node& n) { return eval_reduce(n, Reduce::Sum); };
  table["ReduceProd"] = [](const Node& n) { return eval_reduce(n, Reduce::Prod); };
  table["ReduceMin"] = [](const Node& n) { return eval_reduce(n, Reduce::Min); };
  table["ReduceMax"] = [](const Node& n) { return eval_reduce(n, Reduce::Max); };
}

}  // namespace vkgraph::fold::detail
