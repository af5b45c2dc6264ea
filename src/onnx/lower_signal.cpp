// Audio front-end ops. The window functions (HannWindow, HammingWindow, BlackmanWindow) and
// MelWeightMatrix depend only on scalar inputs that decide the output's shape, so those are
// needed at load time anyway; their tables are built on the host, once, as constants (a model
// input that gives them specialises the graph to it). DFT and STFT run on the device as a
// MatMul and a Conv1d against constant DFT bases.
#include <algorithm>
#include <cmath>

#include "onnx/importer.h"
#include "onnx/lower_util.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::onnx_import {
namespace {

constexpr double kPi = 3.14159265358979323846;

// `values` (row-major, `shape`) as a constant of the node's output_datatype (default float).
Value constant_of(const Importer& im, const onnx::NodeProto& node, const fold::Attrs& a,
                  Shape shape, const std::vector<double>& values) {
  const DType dtype =
      onnx_io::dtype_from_onnx(static_cast<int32_t>(a.get_int("output_datatype", 1)));
  HostTensor t(dtype, shape);
  if (dtype == DType::Bool) im.fail(node, "output_datatype bool is not a number type");
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  Value v;
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.constant = std::move(t);
  return v;
}

int64_t scalar_int(const Importer& im, const onnx::NodeProto& node, size_t i, const char* what,
                   int64_t lo, int64_t hi) {
  const HostTensor& t = im.host_value(node, i, what);
  if (t.numel() != 1) im.fail(node, std::string(what) + " must hold one value");
  const int64_t v = t.as_int(0);
  if (v < lo || v > hi)
    throw Error(ErrorKind::InvalidArgument, im.where(node) + ": " + what + " " + std::to_string(v) +
                                                " outside [" + std::to_string(lo) + ", " +
                                                std::to_string(hi) + "]");
  return v;
}

// Generalised cosine windows: sum_k a_k cos(2 pi k n / D), D = N (periodic) or N - 1.
Lowering window(std::vector<double> coefficients) {
  return [coefficients](Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
    im.require_inputs(node, 1, 1);
    const int64_t size = scalar_int(im, node, 0, "size", 0, int64_t{1} << 24);
    const bool periodic = a.get_int("periodic", 1) != 0;
    const double denominator = static_cast<double>(periodic ? size : size - 1);
    std::vector<double> w(static_cast<size_t>(size));
    for (int64_t n = 0; n < size; ++n) {
      double v = 0;
      for (size_t k = 0; k < coefficients.size(); ++k)
        v += coefficients[k] *
             (denominator > 0 ? std::cos(2 * kPi * static_cast<double>(k * n) / denominator) : 1.0);
      w[static_cast<size_t>(n)] = v;
    }
    return std::vector<Value>{constant_of(im, node, a, {size}, w)};
  };
}

double mel_of(double hertz) {
  return 2595.0 * std::log10(1.0 + hertz / 700.0);
}
double hertz_of(double mel) {
  return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
}

// Triangular filters between mel-spaced edges, each edge snapped down to a DFT bin, as ONNX's
// definition computes them: [dft_length / 2 + 1, num_mel_bins].
std::vector<Value> lower_mel_weight_matrix(Importer& im, const onnx::NodeProto& node,
                                           const fold::Attrs& a) {
  im.require_inputs(node, 5, 5);
  im.require_host_values(node, {0, 1, 2, 3, 4});
  const int64_t mel_bins = scalar_int(im, node, 0, "num_mel_bins", 1, 1 << 16);
  const int64_t dft_length = scalar_int(im, node, 1, "dft_length", 1, 1 << 24);
  const int64_t sample_rate = scalar_int(im, node, 2, "sample_rate", 1, int64_t{1} << 40);
  const double lower = im.host_value(node, 3, "lower_edge_hertz").as_double(0);
  const double upper = im.host_value(node, 4, "upper_edge_hertz").as_double(0);
  if (!(lower >= 0 && upper > lower && upper <= sample_rate / 2.0 + 1e-6))
    throw Error(ErrorKind::InvalidArgument,
                im.where(node) + ": edges " + std::to_string(lower) + " to " +
                    std::to_string(upper) +
                    " Hz must satisfy 0 <= lower < upper <= " + "sample_rate / 2");
  const int64_t bins = dft_length / 2 + 1;
  const double step = (mel_of(upper) - mel_of(lower)) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = hertz_of(mel_of(lower) + step * static_cast<double>(i));
    edge[i] = static_cast<int64_t>(std::floor((dft_length + 1) * hz / sample_rate));
    if (edge[i] < 0 || edge[i] >= bins) im.fail(node, "a filter edge falls outside the DFT bins");
  }
  std::vector<double> w(static_cast<size_t>(bins * mel_bins), 0.0);
  auto at = [&](int64_t bin, int64_t mel) -> double& { return w[bin * mel_bins + mel]; };
  for (int64_t m = 0; m < mel_bins; ++m) {
    const int64_t left = edge[m], center = edge[m + 1], right = edge[m + 2];
    if (center == left)
      at(center, m) = 1.0;
    else
      for (int64_t j = left; j <= center; ++j)
        at(j, m) = static_cast<double>(j - left) / static_cast<double>(center - left);
    for (int64_t j = center; j < right; ++j)
      at(j, m) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  return {constant_of(im, node, a, {bins, mel_bins}, w)};
}

// Largest DFT basis matrix built (the basis is O(N^2); FFT-sized signals need a real FFT).
constexpr int64_t kMaxBasisElements = int64_t{1} << 24;

// Real and imaginary parts of x[n] e^(-+ i 2 pi m n / length) for input component `part` (0
// real, 1 imaginary) into output component `out` (0 real, 1 imaginary).
double dft_term(int64_t m, int64_t n, int64_t length, bool inverse, int part, int out) {
  const double theta =
      2 * kPi * static_cast<double>((m * n) % length) / static_cast<double>(length);
  const double s = inverse ? -1.0 : 1.0;  // forward: e^(-i theta)
  if (part == 0) return out == 0 ? std::cos(theta) : -s * std::sin(theta);
  return out == 0 ? s * std::sin(theta) : std::cos(theta);
}

// DFT as one MatMul against a constant basis: the signal axis is moved next to the complex
// dim, rows of [signal, component] are multiplied by a [N * c, bins * 2] matrix, and the
// result is moved back. Exact to rounding and fast for the short transforms models use.
std::vector<Value> lower_dft(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 1, 2);
  const Shape shape = im.input(node, 0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2 || (shape.back() != 1 && shape.back() != 2))
    im.fail(node, "input " + shape_str(shape) + " must end in a complex dim of 1 or 2");
  int64_t axis = a.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1)
    throw Error(ErrorKind::InvalidArgument, im.where(node) + ": axis " +
                                                std::to_string(a.get_int("axis", 1)) +
                                                " is not a signal dim of " + shape_str(shape));
  const bool inverse = a.get_int("inverse", 0) != 0;
  const bool onesided = a.get_int("onesided", 0) != 0;
  const int64_t n = shape[axis], c = shape.back();
  if (numel(shape) == 0) im.fail(node, "input " + shape_str(shape) + " is empty");
  const int64_t length =
      im.has_input(node, 1) ? scalar_int(im, node, 1, "dft_length", 1, int64_t{1} << 24) : n;
  if (onesided && (inverse || c != 1)) im.fail(node, "onesided needs a real forward transform");
  const int64_t bins = onesided ? length / 2 + 1 : length;
  // n may be any dim the model declares: compared by division, so that n * c * bins * 2 cannot
  // overflow (c * bins * 2 is at most 2^26 + 4).
  if (n > kMaxBasisElements / (c * bins * 2))
    throw Error(ErrorKind::Unsupported, im.where(node) + ": a DFT of " + std::to_string(length) +
                                            " points is too long for the matrix form");
  std::vector<float> basis(static_cast<size_t>(n * c * bins * 2), 0.f);
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t k = 0; k < std::min(n, length); ++k)  // samples past dft_length are dropped
    for (int part = 0; part < c; ++part)
      for (int64_t m = 0; m < bins; ++m)
        for (int out = 0; out < 2; ++out)
          basis[((k * c + part) * bins + m) * 2 + out] =
              static_cast<float>(scale * dft_term(m, k, length, inverse, part, out));
  return with_node(im, node, [&] {
    ComputeGraph& g = im.graph();
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank - 1; ++d)
      if (d != axis) perm.push_back(d);
    perm.push_back(axis);
    perm.push_back(rank - 1);
    TensorRef moved = ops::transpose(g, im.tensor(node, 0), perm);
    const int64_t rows = numel(shape) / (n * c);
    TensorRef w = g.add_constant(HostTensor::from(DType::Float32, {n * c, bins * 2}, basis));
    TensorRef y = ops::matmul(g, g.add_view(moved, {rows, n * c}), w);
    Shape moved_out;
    for (int64_t p : perm) moved_out.push_back(shape[p]);
    moved_out[rank - 2] = bins;
    moved_out[rank - 1] = 2;
    std::vector<int64_t> back(rank);
    for (int64_t d = 0; d < rank; ++d) back[perm[d]] = d;
    return std::vector<Value>{device(im, ops::transpose(g, g.add_view(y, moved_out), back))};
  });
}

// STFT as one strided Conv1d: each output channel is one (bin, real/imaginary) pair of the
// windowed DFT basis, the stride is frame_step, and the conv's [batch, bins * 2, frames]
// result is transposed to ONNX's [batch, frames, bins, 2].
std::vector<Value> lower_stft(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  im.require_inputs(node, 2, 4);
  const Shape shape = im.input(node, 0).shape;
  if (shape.size() != 3 || (shape[2] != 1 && shape[2] != 2))
    im.fail(node, "signal " + shape_str(shape) + " must be [batch, length, 1 or 2]");
  const int64_t batch = shape[0], samples = shape[1], c = shape[2];
  const int64_t step = scalar_int(im, node, 1, "frame_step", 1, int64_t{1} << 30);
  int64_t frame = 0;
  if (im.has_input(node, 3)) frame = scalar_int(im, node, 3, "frame_length", 1, samples);
  if (im.has_input(node, 2)) {
    const Shape& ws = im.input(node, 2).shape;
    if (ws.size() != 1 || (frame != 0 && ws[0] != frame))
      im.fail(node, "window " + shape_str(ws) + " must be [frame_length]");
    frame = ws[0];
  }
  if (frame < 1 || frame > samples) im.fail(node, "needs a frame_length within the signal");
  const bool onesided = a.get_int("onesided", 1) != 0;
  if (onesided && c != 1) im.fail(node, "onesided needs a real signal");
  const int64_t bins = onesided ? frame / 2 + 1 : frame;
  if (bins * 2 * c * frame > kMaxBasisElements)
    throw Error(ErrorKind::Unsupported, im.where(node) + ": frames of " + std::to_string(frame) +
                                            " samples are too long for the matrix form");
  std::vector<float> basis(static_cast<size_t>(bins * 2 * c * frame));
  for (int64_t m = 0; m < bins; ++m)
    for (int out = 0; out < 2; ++out)
      for (int part = 0; part < c; ++part)
        for (int64_t k = 0; k < frame; ++k)
          basis[((m * 2 + out) * c + part) * frame + k] =
              static_cast<float>(dft_term(m, k, frame, false, part, out));
  return with_node(im, node, [&] {
    ComputeGraph& g = im.graph();
    TensorRef w = g.add_constant(HostTensor::from(DType::Float32, {bins * 2, c, frame}, basis));
    if (im.has_input(node, 2))
      w = ops::binary(g, ops::BinaryOp::Mul, w, g.add_view(im.tensor(node, 2), {1, 1, frame}));
    TensorRef x = ops::transpose(g, im.tensor(node, 0), {0, 2, 1});  // [batch, c, samples]
    ops::Conv1dParams p;
    p.stride = step;
    TensorRef y = ops::conv1d(g, x, w, p);  // [batch, bins * 2, frames]
    const int64_t frames = g.info(y).shape[2];
    TensorRef t = ops::transpose(g, y, {0, 2, 1});
    return std::vector<Value>{device(im, g.add_view(t, {batch, frames, bins, 2}))};
  });
}

}  // namespace

void register_signal(LoweringTable& t) {
  t["DFT"] = lower_dft;
  t["STFT"] = lower_stft;
  t["HannWindow"] = window({0.5, -0.5});
  t["HammingWindow"] = window({25.0 / 46.0, -21.0 / 46.0});
  t["BlackmanWindow"] = window({0.42, -0.5, 0.08});
  t["MelWeightMatrix"] = lower_mel_weight_matrix;
}

}  // namespace vkgraph::onnx_import
