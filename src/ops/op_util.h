#pragma once
// Helpers shared by the op files: push-constant packing, workgroup counts, axis handling.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "vkgraph/error.h"
#include "vkgraph/graph/compute_graph.h"
#include "vkgraph/ops.h"
#include "vkgraph/vk/context.h"

namespace vkgraph::ops {

// Appends trivially-copyable values to a push-constant block (std430-compatible for
// scalars and int arrays).
class PushConstants {
 public:
  template <typename T>
  PushConstants& add(const T& v) {
    size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    return *this;
  }
  template <typename T>
  PushConstants& add_array(const std::vector<T>& values, size_t length) {
    for (size_t i = 0; i < length; ++i) add(i < values.size() ? values[i] : T{});
    return *this;
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

constexpr int kMaxRank = 6;
constexpr uint32_t kLocal = 128;

// Workgroups to cover `n` invocations of `local` threads, spread over x and y so no dimension
// exceeds the guaranteed 65535 limit. Shaders linearize with linear_index() in common.glsl.
std::array<uint32_t, 3> groups_for(uint64_t n, uint32_t local = kLocal);

// Normalizes a possibly negative axis; throws naming `op`.
int normalize_axis(int64_t axis, size_t rank, const std::string& op);

// a * b and a + b of dims or offsets that may come from a corrupt model; throw
// InvalidArgument naming `op` where int64 overflows.
int64_t checked_mul(int64_t a, int64_t b, const std::string& op);
int64_t checked_add(int64_t a, int64_t b, const std::string& op);

// Row-major strides of `shape`, with broadcast dims (size 1 against a larger output) set to 0,
// right-aligned to `out` and padded to kMaxRank.
std::vector<int32_t> broadcast_strides(const Shape& shape, const Shape& out);
std::vector<int32_t> to_i32(const Shape& shape, const std::string& op);

// Kernel tuning knob `key` (e.g. "add.local") of `g`'s GraphOptions::tuning, or `fallback`.
// Knobs exist for tuning sweeps on real devices (vkgraph bench-op) without a rebuild per
// configuration; defaults are chosen in code.
uint32_t tuned(ComputeGraph& g, const std::string& key, uint32_t fallback);

void require_dtype(ComputeGraph& g, TensorRef t, DType dtype, const std::string& op);

// `dtype` when it is a float dtype the device can run: Float32, or Float16 (float16 storage,
// float32 arithmetic) where the device has 16-bit storage buffers. Anything else is an
// Unsupported error naming `op`.
DType float_dtype(ComputeGraph& g, DType dtype, const std::string& op);
// Whether float16 tensors may also be computed in float16 (shaderFloat16), by the kernels that
// declare such variants: where the device has it and the "fp16.math" knob is 1 (off by
// default, op_util.cpp says why).
bool half_arithmetic(ComputeGraph& g);
// The dtype part of the name of a shader declared the older way, with vkgraph_shader()
// ("f32", "f16", "i32", "i64", "bool"); families declared as variants pick ids instead.
std::string shader_suffix(DType dtype);
// float_dtype of `t`, after checking that every tensor in `same` has t's dtype.
DType float_dtype(ComputeGraph& g, TensorRef t, std::initializer_list<TensorRef> same,
                  const std::string& op);

// The variant a family's find() returned; nullopt (a combination the family does not declare,
// which the dtype checks above should have ruled out) is an Unsupported error naming `op`.
vk::ShaderId declared(std::optional<vk::ShaderId> variant, const std::string& op);

// Activations the conv and matmul epilogues fuse: activation.glsl's ACT_* codes, which are
// the positions in unary.cmake's `epilogue` list.
enum class EpilogueActivation : int32_t {
  None = 0,
  Relu,
  LeakyRelu,
  Sigmoid,
  Tanh,
  Gelu,
  GeluTanh,
  Clip,
  HardSigmoid,
  HardSwish,
  Silu,
};
// nullopt for activations no epilogue implements (not in the `epilogue` list).
std::optional<EpilogueActivation> epilogue_activation(UnaryOp op);

}  // namespace vkgraph::ops
