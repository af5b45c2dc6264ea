// Where, compare, logical ops and cast against CPU references, with broadcasting, NaN, Bool
// tensors whose sizes are not multiples of 4, and Int64 values that differ only in the high word.
#include <cmath>
#include <limits>

#include "shape_test_util.h"

namespace vkgraph::testing {
namespace {

class OpsLogic : public GpuTest {
 protected:
  // Values drawn from a small set so that equal elements are common.
  HostTensor tie_tensor(DType dtype, Shape shape) {
    HostTensor t(dtype, std::move(shape));
    std::uniform_int_distribution<int> pick(0, 3);
    const float f[] = {-1.5f, 0.f, 2.25f, std::numeric_limits<float>::quiet_NaN()};
    const int64_t big = int64_t{1} << 33;
    const int64_t l[] = {-big, 7, big + 7, big};  // big + 7 and 7 share the low word
    for (int64_t i = 0; i < t.numel(); ++i) {
      int k = pick(rng);
      switch (dtype) {
        case DType::Float32:
          t.data<float>()[i] = f[k];
          break;
        case DType::Int32:
          t.data<int32_t>()[i] = k - 1;
          break;
        case DType::Int64:
          t.data<int64_t>()[i] = l[k];
          break;
        default:
          t.data<uint8_t>()[i] = k & 1;
          break;
      }
    }
    return t;
  }
};

// out[c] = f(a[c], b[c]) under broadcasting, f on doubles (exact for these values).
HostTensor ref_bool_binary(const HostTensor& a, const HostTensor& b,
                           const std::function<bool(double, double)>& f) {
  Shape out = ops::broadcast_shapes(a.shape, b.shape, "ref");
  HostTensor y(DType::Bool, out);
  for (int64_t i = 0; i < y.numel(); ++i) {
    auto c = unravel(i, out);
    y.data<uint8_t>()[i] = f(a.as_double(broadcast_index(c, out, a.shape)),
                             b.as_double(broadcast_index(c, out, b.shape)));
  }
  return y;
}

TEST_F(OpsLogic, WhereBroadcastsAllThree) {
  struct Case {
    Shape cond, a, b;
    DType dtype;
  };
  const Case cases[] = {
      {{2, 1, 5}, {3, 1}, {1}, DType::Float32},
      {{7}, {7}, {7}, DType::Int64},
      {{3, 1}, {1, 3}, {3, 3}, DType::Bool},
      {{}, {2, 2, 1, 1, 3, 2}, {2, 1, 1, 3, 1}, DType::Int32},  // scalar cond, rank 6
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(dtype_name(c.dtype));
    auto cond = random_tensor(rng, DType::Bool, c.cond);
    auto a = random_tensor(rng, c.dtype, c.a), b = random_tensor(rng, c.dtype, c.b);
    auto y = run_one({cond, a, b},
                     [](ComputeGraph& g, auto in) { return ops::where(g, in[0], in[1], in[2]); });
    Shape out = ops::broadcast_shapes(c.cond, ops::broadcast_shapes(c.a, c.b, "ref"), "ref");
    HostTensor want(c.dtype, out);
    size_t es = dtype_size(c.dtype);
    for (int64_t i = 0; i < want.numel(); ++i) {
      auto k = unravel(i, out);
      const HostTensor& pick = cond.data<uint8_t>()[broadcast_index(k, out, c.cond)] ? a : b;
      std::memcpy(want.bytes.data() + i * es,
                  pick.bytes.data() + broadcast_index(k, out, pick.shape) * es, es);
    }
    expect_same(y, want);
  }
}

TEST_F(OpsLogic, WhereErrors) {
  ComputeGraph g(context());
  auto fc = g.add_input({3}, DType::Float32, "fc");
  auto bc = g.add_input({3}, DType::Bool, "bc");
  auto a = g.add_input({3}, DType::Float32, "a");
  auto b = g.add_input({3}, DType::Int32, "b");
  auto c = g.add_input({4}, DType::Float32, "c");
  expect_error([&] { ops::where(g, fc, a, a); }, ErrorKind::InvalidArgument,
               "where: cond must be Bool, not float32");
  expect_error([&] { ops::where(g, bc, a, b); }, ErrorKind::InvalidArgument,
               "where: dtypes differ (float32 vs int32)");
  expect_error([&] { ops::where(g, bc, a, c); }, ErrorKind::InvalidArgument,
               "where: shapes [3] and [4] do not broadcast");
}

TEST_F(OpsLogic, CompareEveryOpAndDtype) {
  using C = ops::CompareOp;
  const std::pair<C, std::function<bool(double, double)>> ops_[] = {
      {C::Equal, [](double x, double y) { return x == y; }},
      {C::Less, [](double x, double y) { return x < y; }},
      {C::LessOrEqual, [](double x, double y) { return x <= y; }},
      {C::Greater, [](double x, double y) { return x > y; }},
      {C::GreaterOrEqual, [](double x, double y) { return x >= y; }},
  };
  for (DType dtype : {DType::Float32, DType::Int32, DType::Int64, DType::Bool}) {
    auto a = tie_tensor(dtype, {3, 1, 5}), b = tie_tensor(dtype, {4, 5});
    auto outs = run_ops({a, b}, [&](ComputeGraph& g, auto in) {
      std::vector<TensorRef> r;
      for (auto& [op, f] : ops_) r.push_back(ops::compare(g, op, in[0], in[1]));
      return r;
    });
    for (size_t k = 0; k < outs.size(); ++k) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " op " + std::to_string(k));
      expect_same(outs[k], ref_bool_binary(a, b, ops_[k].second));
    }
  }
}

TEST_F(OpsLogic, LogicalOps) {
  auto a = random_tensor(rng, DType::Bool, {2, 3, 7}), b = random_tensor(rng, DType::Bool, {3, 1});
  auto outs = run_ops({a, b}, [](ComputeGraph& g, auto in) {
    return std::vector<TensorRef>{ops::logical(g, ops::LogicalOp::And, in[0], in[1]),
                                  ops::logical(g, ops::LogicalOp::Or, in[0], in[1]),
                                  ops::logical(g, ops::LogicalOp::Xor, in[0], in[1]),
                                  ops::logical_not(g, in[0])};
  });
  expect_same(outs[0], ref_bool_binary(a, b, [](double x, double y) { return x && y; }));
  expect_same(outs[1], ref_bool_binary(a, b, [](double x, double y) { return x || y; }));
  expect_same(outs[2],
              ref_bool_binary(a, b, [](double x, double y) { return (x != 0) != (y != 0); }));
  HostTensor not_a(DType::Bool, a.shape);
  for (int64_t i = 0; i < a.numel(); ++i) not_a.data<uint8_t>()[i] = !a.data<uint8_t>()[i];
  expect_same(outs[3], not_a);
}

TEST_F(OpsLogic, CompareAndLogicalErrors) {
  ComputeGraph g(context());
  auto f = g.add_input({3}, DType::Float32, "f");
  auto i = g.add_input({3}, DType::Int32, "i");
  auto h = g.add_input({3}, DType::Float16, "h");
  auto b = g.add_input({3}, DType::Bool, "b");
  expect_error([&] { ops::compare(g, ops::CompareOp::Less, f, i); }, ErrorKind::InvalidArgument,
               "less: dtypes differ (float32 vs int32)");
  expect_error([&] { ops::compare(g, ops::CompareOp::Equal, h, h); }, ErrorKind::Unsupported,
               "equal: dtype float16 is not supported");
  expect_error([&] { ops::logical(g, ops::LogicalOp::Or, b, f); }, ErrorKind::InvalidArgument,
               "logical_or: b must be Bool, not float32");
  expect_error([&] { ops::logical_not(g, i); }, ErrorKind::InvalidArgument,
               "logical_not: x must be Bool, not int32");
}

HostTensor cast_source(DType from) {
  switch (from) {
    case DType::Float32:  // NaN and out-of-range values only where the target defines them
      return make_tensor<float>(
          from, {10}, {-2.7f, -0.5f, 0.f, 0.4f, 1.9f, 100.5f, -1e6f, 7.f, 12345.678f, -0.f});
    case DType::Int32:
      return make_tensor<int32_t>(from, {7},
                                  {-5, 0, 1, 7, std::numeric_limits<int32_t>::min(),
                                   std::numeric_limits<int32_t>::max(), 123456789});
    case DType::Int64:
      return make_tensor<int64_t>(from, {7},
                                  {-5, 0, int64_t{1} << 32, (int64_t{1} << 33) + 3,
                                   -(int64_t{1} << 40), int64_t{1} << 31, (int64_t{1} << 32) + 7});
    default:
      return make_tensor<uint8_t>(from, {5}, {0, 1, 1, 0, 1});
  }
}

template <typename To>
To cast_value(const HostTensor& x, int64_t i) {
  switch (x.dtype) {
    case DType::Float32: {
      float v = x.data<float>()[i];
      if constexpr (std::is_same_v<To, uint8_t>) return v != 0.f;
      return static_cast<To>(v);
    }
    case DType::Int32:
      return static_cast<To>(x.data<int32_t>()[i]);
    case DType::Int64:
      return static_cast<To>(x.data<int64_t>()[i]);
    default:
      return static_cast<To>(x.data<uint8_t>()[i]);
  }
}

HostTensor ref_cast(const HostTensor& x, DType to) {
  HostTensor y(to, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) switch (to) {
      case DType::Float32:
        y.data<float>()[i] = cast_value<float>(x, i);
        break;
      case DType::Int32:
        y.data<int32_t>()[i] = cast_value<int32_t>(x, i);
        break;
      case DType::Int64:
        y.data<int64_t>()[i] = cast_value<int64_t>(x, i);
        break;
      default:
        y.data<uint8_t>()[i] =
            x.dtype == DType::Float32 ? cast_value<uint8_t>(x, i) : x.as_int(i) != 0;
        break;
    }
  return y;
}

TEST_F(OpsLogic, CastEveryPair) {
  const DType all[] = {DType::Float32, DType::Int32, DType::Int64, DType::Bool};
  for (DType from : all) {
    HostTensor x = cast_source(from);
    auto outs = run_ops({x}, [&](ComputeGraph& g, auto in) {
      std::vector<TensorRef> r;
      for (DType to : all) r.push_back(ops::cast(g, in[0], to));
      return r;
    });
    for (size_t k = 0; k < 4; ++k) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(all[k]));
      expect_same(outs[k], ref_cast(x, all[k]));
    }
  }
}

TEST_F(OpsLogic, CastFloatSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = make_tensor<float>(DType::Float32, {5}, {nan, -0.f, 3e9f, -5e12f, 0.f});
  auto outs = run_ops({x}, [](ComputeGraph& g, auto in) {
    return std::vector<TensorRef>{ops::cast(g, in[0], DType::Bool),
                                  ops::cast(g, ops::slice(g, in[0], {1}, {5}), DType::Int64)};
  });
  expect_same(outs[0], make_tensor<uint8_t>(DType::Bool, {5}, {1, 0, 1, 1, 0}));
  expect_same(outs[1], make_tensor<int64_t>(DType::Int64, {4},
                                            {0, 3000000000, static_cast<int64_t>(-5e12f), 0}));
}

// float32 -> float16 rounds to nearest even (the host's float_to_half is the reference),
// float16 -> float32 is exact, and float16 <-> int goes through float32.
TEST_F(OpsLogic, CastFloat16) {
  if (!context()->features().storage_buffer_16bit) GTEST_SKIP() << "no 16-bit storage";
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.f,
                          -0.f,
                          1.f,
                          -2.5f,
                          65504.f,
                          1e6f,
                          -inf,
                          3e-8f,
                          6.1e-5f,
                          1.f + 0x1p-11f,      // a tie: to 1.0, the even neighbour
                          1.f + 3 * 0x1p-11f,  // a tie: up, to the even 1 + 2^-9
                          1.f + 0x1p-11f + 0x1p-20f};
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (int i = 0; i < 40; ++i) v.push_back(std::ldexp(unit(rng), i % 20 - 10));
  const int64_t n = static_cast<int64_t>(v.size());
  auto x = make_tensor<float>(DType::Float32, {n}, v);
  auto outs = run_ops({x}, [](ComputeGraph& g, auto in) {
    TensorRef h = ops::cast(g, in[0], DType::Float16);
    return std::vector<TensorRef>{h, ops::cast(g, h, DType::Float32),
                                  ops::cast(g, h, DType::Int32)};
  });
  HostTensor want_h(DType::Float16, {n}), want_f(DType::Float32, {n}), want_i(DType::Int32, {n});
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t bits = float_to_half(v[i]);
    want_h.data<uint16_t>()[i] = bits;
    want_f.data<float>()[i] = half_to_float(bits);
    const float f = half_to_float(bits);
    want_i.data<int32_t>()[i] = std::isfinite(f) ? static_cast<int32_t>(f) : 0;
  }
  expect_same(outs[0], want_h);
  expect_same(outs[1], want_f);
  // Infinity to int is undefined in C++ and implementation-defined on GPUs: compare the rest.
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(want_f.data<float>()[i])) {
      EXPECT_EQ(outs[2].data<int32_t>()[i], want_i.data<int32_t>()[i]) << "at " << i;
    }
}

TEST_F(OpsLogic, CastErrors) {
  ComputeGraph g2(context());
  auto y = g2.add_input({3}, DType::Int32, "y");
  TensorRef same = ops::cast(g2, y, DType::Int32);
  EXPECT_EQ(g2.info(same).storage, g2.info(y).storage);  // a view, no copy
}

}  // namespace
}  // namespace vkgraph::testing
