#pragma once
// Shared by the integer-kernel tests (test_ops_quant.cpp, test_ops_quant_packed.cpp): a graph
// runner fed from host tensors with outputs read into poisoned memory, tensor builders, the
// rounding-aware comparison of requantized outputs, and exact integer matmul and convolution
// references.
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test.h"
#include "quant_test_util.h"

namespace vkgraph::testing {

// A graph with inputs fed from host tensors and one output, read into poisoned memory.
class Runner {
 public:
  Runner() = default;
  explicit Runner(GraphOptions options) : g(context(), std::move(options)) {}
  ComputeGraph g{context()};
  TensorRef input(const HostTensor& value) {
    feeds_.push_back(value);
    return g.add_input(value.shape, value.dtype, "in" + std::to_string(feeds_.size()));
  }
  // A graph constant, as a model's weights are (the packed kernels need them on the host).
  TensorRef constant(const HostTensor& value) { return g.add_constant(value); }
  std::vector<HostTensor> run(std::vector<TensorRef> outputs) {
    for (size_t i = 0; i < outputs.size(); ++i) g.add_output(outputs[i], "out" + std::to_string(i));
    for (size_t i = 0; i < feeds_.size(); ++i)
      g.copy_to_input(i, feeds_[i].bytes.data(), feeds_[i].nbytes());
    g.execute();
    std::vector<HostTensor> r;
    for (size_t i = 0; i < outputs.size(); ++i) {
      TensorInfo ti = g.info(outputs[i]);
      HostTensor t(ti.dtype, ti.shape);
      std::memset(t.bytes.data(), 0xA5, t.bytes.size());
      g.copy_from_output(i, t.bytes.data(), t.bytes.size());
      r.push_back(std::move(t));
    }
    return r;
  }
  HostTensor run(TensorRef out) { return run(std::vector<TensorRef>{out})[0]; }

 private:
  std::vector<HostTensor> feeds_;
};

inline HostTensor f32(Shape s, const std::vector<float>& v) {
  return HostTensor::from(DType::Float32, s, v);
}
inline HostTensor i32(Shape s, const std::vector<int32_t>& v) {
  return HostTensor::from(DType::Int32, s, v);
}
inline HostTensor bytes(DType d, Shape s, const std::vector<int>& v) {
  HostTensor t(d, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.bytes[i] = static_cast<uint8_t>(v[i]);
  return t;
}

// GPU and reference may round a quotient differently only when it lies within float error of
// a rounding boundary (x.5); anywhere else they must agree exactly.
inline void expect_quantized(const HostTensor& got, const std::vector<double>& quotients,
                             const std::vector<int>& zeros, DType d, const std::string& what) {
  ASSERT_EQ(got.dtype, d) << what;
  ASSERT_EQ(static_cast<size_t>(got.numel()), quotients.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < quotients.size(); ++i) {
    const int want = quantize_ref(quotients[i], zeros[i], d);
    const int v = static_cast<int>(got.as_int(static_cast<int64_t>(i)));
    const double frac = std::abs(quotients[i] - std::floor(quotients[i]) - 0.5);
    const bool near_tie = frac < 1e-5 * std::max(1.0, std::abs(quotients[i]));
    if (v != want && !(near_tie && std::abs(v - want) == 1) && bad++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: got " << v << ", want " << want
                    << " (x / scale = " << quotients[i] << ")";
  }
  EXPECT_EQ(bad, 0) << what;
}

inline std::vector<int64_t> matmul_ref(const std::vector<int>& a, const std::vector<int>& b,
                                       int64_t batch, int64_t m, int64_t k, int64_t n,
                                       const std::vector<int>& za, const std::vector<int>& zb,
                                       bool b_batched) {
  std::vector<int64_t> y(batch * m * n, 0);
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t l = 0; l < k; ++l) {
          int av = a[(z * m + i) * k + l] - za[za.size() == 1 ? 0 : i];
          int bv = b[((b_batched ? z : 0) * k + l) * n + j] - zb[zb.size() == 1 ? 0 : j];
          s += int64_t(av) * bv;
        }
        y[(z * m + i) * n + j] = s;
      }
  return y;
}

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, groups;
  std::array<int64_t, 2> stride, dil;
  std::array<int64_t, 4> pads;
};

// Reference integer convolution; returns sums and the output shape.
inline std::vector<int64_t> conv_ref(const ConvCase& p, const std::vector<int>& x,
                                     const std::vector<int>& w, int zx, const std::vector<int>& zw,
                                     Shape& out) {
  int64_t ho = (p.h + p.pads[0] + p.pads[2] - p.dil[0] * (p.kh - 1) - 1) / p.stride[0] + 1;
  int64_t wo = (p.w + p.pads[1] + p.pads[3] - p.dil[1] * (p.kw - 1) - 1) / p.stride[1] + 1;
  out = {p.n, p.m, ho, wo};
  const int64_t cg = p.c / p.groups, mg = p.m / p.groups;
  std::vector<int64_t> y(numel(out));
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t oc = 0; oc < p.m; ++oc)
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          int64_t s = 0, g = oc / mg;
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                int64_t iy = oy * p.stride[0] - p.pads[0] + ky * p.dil[0];
                int64_t ix = ox * p.stride[1] - p.pads[1] + kx * p.dil[1];
                int xv = zx;  // padding reads the zero point
                if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w)
                  xv = x[((b * p.c + g * cg + ic) * p.h + iy) * p.w + ix];
                int wv = w[((oc * cg + ic) * p.kh + ky) * p.kw + kx];
                s += int64_t(xv - zx) * (wv - zw[zw.size() == 1 ? 0 : oc]);
              }
          y[((b * p.m + oc) * ho + oy) * wo + ox] = s;
        }
  return y;
}

}  // namespace vkgraph::testing
