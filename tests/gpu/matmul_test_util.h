#pragma once
// The double-precision reference and the fixture of the matmul tests (test_ops_matmul.cpp:
// shapes, linear, gemm, activations, errors; test_ops_matmul_configs.cpp: tile
// configurations, split-K, float16). In a namespace of its own: other op tests have their own
// unravel, expect_close and activate.
#include <cmath>
#include <functional>
#include <string>

#include "gpu_test.h"
#include "ops/matmul_config.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing::matmul_reference {

using ops::UnaryOp;
using ops::UnaryParams;

struct HostMat {
  Shape shape;
  std::vector<float> v;
};

// Expected values and, per element, the sum of the magnitudes that went into it: float
// rounding error grows with that sum, not with the (possibly cancelled) result.
struct Reference {
  Shape shape;
  std::vector<double> value, scale;
};

// Row-major offset in `shape` of the element that `index` (a coordinate of the broadcast
// result `out`) reads.
inline int64_t broadcast_offset(const Shape& shape, const Shape& out,
                                const std::vector<int64_t>& index) {
  int64_t offset = 0, stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t d = shape.size() - 1 - i, o = out.size() - 1 - i;
    if (shape[d] != 1) offset += index[o] * stride;
    stride *= shape[d];
  }
  return offset;
}

inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}

inline Reference reference_matmul(const HostMat& a, const HostMat& b) {
  Shape sa = a.shape, sb = b.shape;
  bool a_vector = sa.size() == 1, b_vector = sb.size() == 1;
  if (a_vector) sa.insert(sa.begin(), 1);
  if (b_vector) sb.push_back(1);
  int64_t m_dim = sa.end()[-2], k_dim = sa.back(), n_dim = sb.back();
  Shape batch = ops::broadcast_shapes(Shape(sa.begin(), sa.end() - 2),
                                      Shape(sb.begin(), sb.end() - 2), "reference");
  Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  Reference r;
  r.shape = batch;
  if (!a_vector) r.shape.push_back(m_dim);
  if (!b_vector) r.shape.push_back(n_dim);
  for (int64_t z = 0; z < numel(batch); ++z) {
    std::vector<int64_t> index = unravel(z, batch);
    const float* pa = a.v.data() + broadcast_offset(batch_a, batch, index) * m_dim * k_dim;
    const float* pb = b.v.data() + broadcast_offset(batch_b, batch, index) * k_dim * n_dim;
    for (int64_t m = 0; m < m_dim; ++m)
      for (int64_t n = 0; n < n_dim; ++n) {
        double sum = 0, scale = 0;
        for (int64_t k = 0; k < k_dim; ++k) {
          double term = double(pa[m * k_dim + k]) * pb[k * n_dim + n];
          sum += term;
          scale += std::abs(term);
        }
        r.value.push_back(sum);
        r.scale.push_back(scale);
      }
  }
  return r;
}

inline HostMat transpose(const HostMat& x) {
  int64_t rows = x.shape[0], cols = x.shape[1];
  HostMat t{{cols, rows}, std::vector<float>(x.v.size())};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t.v[j * rows + i] = x.v[i * cols + j];
  return t;
}

// r = alpha * r + beta * bias (bias broadcast to r's shape).
inline void apply_bias(Reference& r, double alpha, const HostMat* bias, double beta) {
  for (size_t i = 0; i < r.value.size(); ++i) {
    r.value[i] *= alpha;
    r.scale[i] *= std::abs(alpha);
    if (!bias) continue;
    double c = beta * bias->v[broadcast_offset(bias->shape, r.shape, unravel(i, r.shape))];
    r.value[i] += c;
    r.scale[i] += std::abs(c);
  }
}

// r += residual (of r's shape: a skip connection).
inline void apply_residual(Reference& r, const HostMat& residual) {
  for (size_t i = 0; i < r.value.size(); ++i) {
    r.value[i] += residual.v[i];
    r.scale[i] += std::abs(residual.v[i]);
  }
}

inline double activate(UnaryOp op, UnaryParams p, double x) {
  switch (op) {
    case UnaryOp::Relu:
      return std::max(x, 0.0);
    case UnaryOp::LeakyRelu:
      return x >= 0 ? x : p.alpha * x;
    case UnaryOp::Sigmoid:
      return 1 / (1 + std::exp(-x));
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::Gelu:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case UnaryOp::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryOp::Clip:
      return std::min(std::max(x, double(p.alpha)), double(p.beta));
    case UnaryOp::HardSigmoid:
      return std::clamp(p.alpha * x + p.beta, 0.0, 1.0);
    case UnaryOp::HardSwish:
      return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case UnaryOp::Silu:
      return x / (1 + std::exp(-x));
    case UnaryOp::Identity:
      return x;
    default:
      ADD_FAILURE() << "no reference for UnaryOp " << int(op);
      return x;
  }
}

inline void apply_activation(Reference& r, UnaryOp op, UnaryParams p) {
  for (double& x : r.value) x = activate(op, p, x);
}

inline void expect_close(const std::vector<float>& got, const Shape& got_shape,
                         const Reference& want) {
  ASSERT_EQ(got_shape, want.shape);
  ASSERT_EQ(got.size(), want.value.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tolerance = 1e-4 * (want.scale[i] + std::abs(want.value[i]));
    if (std::abs(got[i] - want.value[i]) <= tolerance) continue;
    ADD_FAILURE() << "element " << i << " of " << shape_str(want.shape) << ": got " << got[i]
                  << ", want " << want.value[i] << " (tolerance " << tolerance << ")";
    if (++reported == 5) return;
  }
}

using Build = std::function<TensorRef(ComputeGraph&, const std::vector<TensorRef>&)>;

// Makes each of `inputs` a graph input, builds the op, runs it and compares with `want`.
inline void run_and_check(const GraphOptions& options, const std::vector<HostMat>& inputs,
                          const Build& build, const Reference& want) {
  ComputeGraph g(context(), options);
  std::vector<TensorRef> refs;
  for (size_t i = 0; i < inputs.size(); ++i)
    refs.push_back(g.add_input(inputs[i].shape, DType::Float32, "in" + std::to_string(i)));
  TensorRef out = build(g, refs);
  Shape out_shape = g.info(out).shape;
  g.add_output(out, "out");
  for (size_t i = 0; i < inputs.size(); ++i)
    g.copy_to_input(i, inputs[i].v.data(), inputs[i].v.size() * sizeof(float));
  g.execute();
  std::vector<float> got(static_cast<size_t>(numel(out_shape)));
  g.copy_from_output(0, got.data(), got.size() * sizeof(float));
  expect_close(got, out_shape, want);
}

class MatmulTest : public GpuTest {
 protected:
  // The kernel tuning the test's graphs are built with (the device's defaults unless a test
  // sets its fields).
  ops::Tuning tuning_;
  GraphOptions graph_options() const {
    GraphOptions options;
    options.tuning = std::make_shared<ops::Tuning>(tuning_);
    return options;
  }
  HostMat random(Shape shape, float lo = -1.f, float hi = 1.f) {
    return {shape, random_floats(static_cast<size_t>(numel(shape)), lo, hi)};
  }

  void check_matmul(const Shape& sa, const Shape& sb, std::optional<Shape> bias_shape = {}) {
    HostMat a = random(sa), b = random(sb);
    std::vector<HostMat> inputs = {a, b};
    Reference want = reference_matmul(a, b);
    if (bias_shape) {
      inputs.push_back(random(*bias_shape));
      apply_bias(want, 1, &inputs.back(), 1);
    }
    run_and_check(
        graph_options(), inputs,
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::matmul(g, in[0], in[1],
                             {.bias = bias_shape ? std::optional(in[2]) : std::nullopt});
        },
        want);
  }

  void check_linear(const Shape& sx, int64_t n, bool with_bias) {
    HostMat x = random(sx), w = random({n, sx.back()}), bias = random({n});
    Reference want = reference_matmul(x, transpose(w));
    apply_bias(want, 1, with_bias ? &bias : nullptr, 1);
    std::vector<HostMat> inputs = {x, w};
    if (with_bias) inputs.push_back(bias);
    run_and_check(
        graph_options(), inputs,
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::linear(g, in[0], in[1],
                             {.bias = with_bias ? std::optional(in[2]) : std::nullopt});
        },
        want);
  }

  // A is [M, K] (stored [K, M] when trans_a), B is [K, N] (stored [N, K] when trans_b).
  void check_gemm(int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b,
                  std::optional<Shape> c_shape, float alpha, float beta) {
    HostMat a = random({m, k}), b = random({k, n});
    HostMat c = c_shape ? random(*c_shape) : HostMat{};
    Reference want = reference_matmul(a, b);
    apply_bias(want, alpha, c_shape ? &c : nullptr, beta);
    std::vector<HostMat> inputs = {trans_a ? transpose(a) : a, trans_b ? transpose(b) : b};
    if (c_shape) inputs.push_back(c);
    run_and_check(
        graph_options(), inputs,
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::gemm(g, in[0], in[1],
                           {.c = c_shape ? std::optional(in[2]) : std::nullopt,
                            .alpha = alpha,
                            .beta = beta,
                            .trans_a = trans_a,
                            .trans_b = trans_b});
        },
        want);
  }

  // act(a b + bias + residual), the residual of the result's shape.
  void check_residual(const Shape& sa, const Shape& sb, bool bias, std::optional<UnaryOp> act) {
    HostMat a = random(sa), b = random(sb), c = random({sb.back()});
    Reference want = reference_matmul(a, b);
    apply_bias(want, 1, bias ? &c : nullptr, 1);
    HostMat residual = random(want.shape, -2.f, 2.f);
    apply_residual(want, residual);
    if (act) apply_activation(want, *act, {});
    std::vector<HostMat> inputs = {a, b, residual};
    if (bias) inputs.push_back(c);
    run_and_check(
        graph_options(), inputs,
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          ops::MatmulEpilogue e;
          e.residual = in[2];
          if (bias) e.bias = in[3];
          e.activation = act;
          return ops::matmul(g, in[0], in[1], e);
        },
        want);
  }

  void check_activation(int64_t m, UnaryOp op, UnaryParams params) {
    const int64_t k = 16, n = 19;
    HostMat a = random({m, k}), b = random({k, n}), bias = random({n});
    Reference want = reference_matmul(a, b);
    apply_bias(want, 1, &bias, 1);
    apply_activation(want, op, params);
    run_and_check(
        graph_options(), {a, b, bias},
        [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
          return ops::matmul(g, in[0], in[1], {in[2], op, params});
        },
        want);
  }
};

}  // namespace vkgraph::testing::matmul_reference
