#pragma once
// Helpers for the data-movement op tests: random host tensors of any dtype, a one-call graph
// runner, coordinate helpers for CPU references, and exact / tolerant comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gpu_test.h"
#include "vkgraph/error.h"
#include "vkgraph/ops.h"

namespace vkgraph::testing {

// Floats in [-1, 1]; Int32 in [-50, 50]; Int64 spanning both 32-bit words (so a lost high word
// shows); Bool 0/1.
inline HostTensor random_tensor(std::mt19937& rng, DType dtype, Shape shape) {
  HostTensor t(dtype, std::move(shape));
  int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::Float32:
        t.data<float>()[i] = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
        break;
      case DType::Int32:
        t.data<int32_t>()[i] = std::uniform_int_distribution<int32_t>(-50, 50)(rng);
        break;
      case DType::Int64:
        t.data<int64_t>()[i] =
            std::uniform_int_distribution<int64_t>(-(int64_t{1} << 40), int64_t{1} << 40)(rng);
        break;
      case DType::Bool:
        t.data<uint8_t>()[i] = std::uniform_int_distribution<int>(0, 1)(rng);
        break;
      default:
        ADD_FAILURE() << "random_tensor: no generator for " << dtype_name(dtype);
    }
  }
  return t;
}

template <typename T>
HostTensor make_tensor(DType dtype, Shape shape, const std::vector<T>& values) {
  return HostTensor::from(dtype, std::move(shape), values);
}

using BuildFn = std::function<std::vector<TensorRef>(ComputeGraph&, const std::vector<TensorRef>&)>;

// Adds `inputs` as graph inputs, lets `build` add ops and return the tensors to read, executes
// once and returns those tensors.
inline std::vector<HostTensor> run_ops(const std::vector<HostTensor>& inputs,
                                       const BuildFn& build) {
  ComputeGraph g(context());
  std::vector<TensorRef> refs;
  for (size_t i = 0; i < inputs.size(); ++i)
    refs.push_back(g.add_input(inputs[i].shape, inputs[i].dtype, "in" + std::to_string(i)));
  std::vector<TensorRef> outs = build(g, refs);
  for (size_t i = 0; i < outs.size(); ++i) g.add_output(outs[i], "out" + std::to_string(i));
  for (size_t i = 0; i < inputs.size(); ++i)
    g.copy_to_input(i, inputs[i].bytes.data(), inputs[i].nbytes());
  g.execute();
  std::vector<HostTensor> results;
  for (size_t i = 0; i < outs.size(); ++i) results.push_back(g.read_output(i));
  return results;
}

inline HostTensor run_one(
    const std::vector<HostTensor>& inputs,
    const std::function<TensorRef(ComputeGraph&, const std::vector<TensorRef>&)>& build) {
  return run_ops(inputs, [&](ComputeGraph& g, const std::vector<TensorRef>& in) {
    return std::vector<TensorRef>{build(g, in)};
  })[0];
}

inline std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    c[k] = i % shape[k];
    i /= shape[k];
  }
  return c;
}

inline int64_t ravel(const std::vector<int64_t>& c, const Shape& shape) {
  int64_t i = 0;
  for (size_t k = 0; k < shape.size(); ++k) i = i * shape[k] + c[k];
  return i;
}

// Linear index into `in` of output coordinate `c`, under NumPy broadcasting of `in` to `out`.
inline int64_t broadcast_index(const std::vector<int64_t>& c, const Shape& out, const Shape& in) {
  size_t off = out.size() - in.size();
  int64_t i = 0;
  for (size_t d = 0; d < in.size(); ++d) i = i * in[d] + (in[d] == 1 ? 0 : c[d + off]);
  return i;
}

// out[c] = x[src(c)] element by element (bytes), or zero bytes where src returns -1.
inline HostTensor map_elements(const HostTensor& x, const Shape& out_shape,
                               const std::function<int64_t(const std::vector<int64_t>&)>& src) {
  HostTensor out(x.dtype, out_shape);
  size_t es = dtype_size(x.dtype);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t s = src(unravel(i, out_shape));
    if (s >= 0) std::memcpy(out.bytes.data() + i * es, x.bytes.data() + s * es, es);
  }
  return out;
}

inline std::string element_str(const HostTensor& t, int64_t i) {
  if (t.dtype == DType::Float32) return std::to_string(t.data<float>()[i]);
  return std::to_string(t.as_int(i));
}

// Same dtype, shape and bytes; reports the first differing element.
inline void expect_same(const HostTensor& got, const HostTensor& want) {
  ASSERT_EQ(got.dtype, want.dtype);
  ASSERT_EQ(shape_str(got.shape), shape_str(want.shape));
  size_t es = dtype_size(want.dtype);
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::memcmp(got.bytes.data() + i * es, want.bytes.data() + i * es, es) != 0) {
      ADD_FAILURE() << "element " << i << " of " << shape_str(want.shape) << ": got "
                    << element_str(got, i) << ", want " << element_str(want, i);
      return;
    }
}

// Float32 within `tol` (absolute + relative), NaN matching NaN.
inline void expect_near(const HostTensor& got, const HostTensor& want, float tol = 1e-5f) {
  ASSERT_EQ(got.dtype, DType::Float32);
  ASSERT_EQ(want.dtype, DType::Float32);
  ASSERT_EQ(shape_str(got.shape), shape_str(want.shape));
  for (int64_t i = 0; i < want.numel(); ++i) {
    float a = got.data<float>()[i], b = want.data<float>()[i];
    bool ok = std::isnan(b) ? std::isnan(a) : std::fabs(a - b) <= tol * (1.f + std::fabs(b));
    if (!ok) {
      ADD_FAILURE() << "element " << i << " of " << shape_str(want.shape) << ": got " << a
                    << ", want " << b;
      return;
    }
  }
}

}  // namespace vkgraph::testing
