// The optimizers of ai.onnx.preview.training (Adagrad, Adam, Momentum): one update step, as
// ONNX defines it, composed of elementwise ops. The learning rate R and the step count T are
// run-time scalars (they change every step), so the factors they give are computed on the
// device too, not specialised on their values.
#include "onnx/importer.h"
#include "onnx/lower_util.h"

namespace vkgraph::onnx_import {
namespace {

using ops::BinaryOp;

// Elementwise arithmetic of one node's update, broadcasting its scalars.
class Update {
 public:
  Update(Importer& im, const onnx::NodeProto& node) : im_(im), g_(im.graph()) {
    const Value& t = im.input(node, 1);
    if (!im.input(node, 0).shape.empty() || !t.shape.empty())
      im.fail(node, "R and T must be scalars");
    if (t.dtype != DType::Int64 && t.dtype != DType::Int32) im.fail(node, "T must be int64");
    r = im.tensor(node, 0);
    t_float = ops::cast(g_, im.tensor(node, 1), DType::Float32);
  }
  TensorRef r, t_float;
  TensorRef k(float v) {
    return im_.constant_tensor(HostTensor::from(DType::Float32, {}, std::vector<float>{v}));
  }
  TensorRef add(TensorRef a, TensorRef b) { return ops::binary(g_, BinaryOp::Add, a, b); }
  TensorRef sub(TensorRef a, TensorRef b) { return ops::binary(g_, BinaryOp::Sub, a, b); }
  TensorRef mul(TensorRef a, TensorRef b) { return ops::binary(g_, BinaryOp::Mul, a, b); }
  TensorRef div(TensorRef a, TensorRef b) { return ops::binary(g_, BinaryOp::Div, a, b); }
  TensorRef pow(TensorRef a, TensorRef b) { return ops::binary(g_, BinaryOp::Pow, a, b); }
  TensorRef sqrt(TensorRef a) { return ops::unary(g_, ops::UnaryOp::Sqrt, a); }
  // `positive` where T > 0, else `otherwise` (scalars).
  TensorRef if_t_positive(TensorRef positive, TensorRef otherwise) {
    return ops::where(g_, ops::compare(g_, ops::CompareOp::Greater, t_float, k(0.f)), positive,
                      otherwise);
  }
  // norm_coefficient * X + G: the gradient of 0.5 * norm_coefficient * ||X||^2 added.
  TensorRef regularized(TensorRef x, TensorRef grad, float norm_coefficient) {
    return add(mul(k(norm_coefficient), x), grad);
  }

 private:
  Importer& im_;
  ComputeGraph& g_;
};

// The number of optimized tensors: inputs are R, T, then `groups` lists of n tensors each.
size_t tensor_count(Importer& im, const onnx::NodeProto& node, size_t groups) {
  const size_t inputs = static_cast<size_t>(node.input_size());
  if (inputs < 2 + groups || (inputs - 2) % groups != 0)
    im.fail(node, "expects R, T and " + std::to_string(groups) +
                      " inputs per optimized tensor, got " + std::to_string(inputs) + " inputs");
  const size_t n = (inputs - 2) / groups;
  if (static_cast<size_t>(node.output_size()) > n * (groups - 1))
    im.fail(node, "has more outputs than " + std::to_string(n * (groups - 1)));
  for (size_t i = 2; i < inputs; ++i) {
    if (!im.has_input(node, i)) im.fail(node, "input " + std::to_string(i) + " is empty");
    if (im.input(node, i).dtype != DType::Float32)
      im.fail(node, "optimized tensors must be float32");
    if (im.input(node, i).shape != im.input(node, 2 + i % n).shape)
      throw Error(ErrorKind::InvalidArgument, im.where(node) + ": input " + std::to_string(i) +
                                                  " " + shape_str(im.input(node, i).shape) +
                                                  " does not match its tensor " +
                                                  shape_str(im.input(node, 2 + i % n).shape));
  }
  return n;
}

float attr(const fold::Attrs& a, const std::string& name, float fallback) {
  auto it = a.floats.find(name);
  return it == a.floats.end() ? fallback : it->second;
}

std::vector<Value> lower_adagrad(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  const size_t n = tensor_count(im, node, 3);
  return with_node(im, node, [&] {
    Update u(im, node);
    const float norm = attr(a, "norm_coefficient", 0.f), eps = attr(a, "epsilon", 1e-6f);
    // r = R / (1 + T * decay_factor)
    TensorRef rate =
        u.div(u.r, u.add(u.k(1.f), u.mul(u.t_float, u.k(attr(a, "decay_factor", 0.f)))));
    std::vector<Value> x_new, h_new;
    for (size_t i = 0; i < n; ++i) {
      TensorRef x = im.tensor(node, 2 + i), h = im.tensor(node, 2 + 2 * n + i);
      TensorRef grad = u.regularized(x, im.tensor(node, 2 + n + i), norm);
      TensorRef h2 = u.add(h, u.mul(grad, grad));
      TensorRef step = u.div(u.mul(rate, grad), u.add(u.sqrt(h2), u.k(eps)));
      x_new.push_back(device(im, u.sub(x, step)));
      h_new.push_back(device(im, h2));
    }
    x_new.insert(x_new.end(), h_new.begin(), h_new.end());
    return x_new;
  });
}

std::vector<Value> lower_momentum(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  const size_t n = tensor_count(im, node, 3);
  for (const char* required : {"alpha", "beta", "norm_coefficient"})
    if (!a.floats.count(required))
      im.fail(node, std::string("missing attribute '") + required + "'");
  auto mode_it = a.strings.find("mode");
  if (mode_it == a.strings.end()) im.fail(node, "missing attribute 'mode'");
  const std::string& mode = mode_it->second;
  if (mode != "standard" && mode != "nesterov")
    throw Error(ErrorKind::InvalidArgument,
                im.where(node) + ": mode must be 'standard' or 'nesterov', got '" + mode + "'");
  return with_node(im, node, [&] {
    Update u(im, node);
    const float alpha = a.floats.at("alpha"), norm = a.floats.at("norm_coefficient");
    // The first step (T = 0) takes the gradient whole.
    TensorRef beta = u.if_t_positive(u.k(a.floats.at("beta")), u.k(1.f));
    std::vector<Value> x_new, v_new;
    for (size_t i = 0; i < n; ++i) {
      TensorRef x = im.tensor(node, 2 + i), v = im.tensor(node, 2 + 2 * n + i);
      TensorRef grad = u.regularized(x, im.tensor(node, 2 + n + i), norm);
      TensorRef v2 = u.add(u.mul(u.k(alpha), v), u.mul(beta, grad));
      TensorRef direction = mode == "standard" ? v2 : u.add(grad, u.mul(u.k(alpha), v2));
      x_new.push_back(device(im, u.sub(x, u.mul(u.r, direction))));
      v_new.push_back(device(im, v2));
    }
    x_new.insert(x_new.end(), v_new.begin(), v_new.end());
    return x_new;
  });
}

std::vector<Value> lower_adam(Importer& im, const onnx::NodeProto& node, const fold::Attrs& a) {
  const size_t n = tensor_count(im, node, 4);
  return with_node(im, node, [&] {
    Update u(im, node);
    const float alpha = attr(a, "alpha", 0.9f), beta = attr(a, "beta", 0.999f);
    const float norm = attr(a, "norm_coefficient", 0.f), eps = attr(a, "epsilon", 1e-6f);
    const float post = attr(a, "norm_coefficient_post", 0.f);
    // R * sqrt(1 - beta^T) / (1 - alpha^T) once T > 0 (bias correction), else R.
    TensorRef corrected = u.div(u.mul(u.r, u.sqrt(u.sub(u.k(1.f), u.pow(u.k(beta), u.t_float)))),
                                u.sub(u.k(1.f), u.pow(u.k(alpha), u.t_float)));
    TensorRef rate = u.if_t_positive(corrected, u.r);
    std::vector<Value> x_new, v_new, h_new;
    for (size_t i = 0; i < n; ++i) {
      TensorRef x = im.tensor(node, 2 + i), v = im.tensor(node, 2 + 2 * n + i);
      TensorRef h = im.tensor(node, 2 + 3 * n + i);
      TensorRef grad = u.regularized(x, im.tensor(node, 2 + n + i), norm);
      TensorRef v2 = u.add(u.mul(u.k(alpha), v), u.mul(u.k(1.f - alpha), grad));
      TensorRef h2 = u.add(u.mul(u.k(beta), h), u.mul(u.k(1.f - beta), u.mul(grad, grad)));
      TensorRef step = u.div(u.mul(rate, v2), u.add(u.sqrt(h2), u.k(eps)));
      x_new.push_back(device(im, u.mul(u.k(1.f - post), u.sub(x, step))));
      v_new.push_back(device(im, v2));
      h_new.push_back(device(im, h2));
    }
    x_new.insert(x_new.end(), v_new.begin(), v_new.end());
    x_new.insert(x_new.end(), h_new.begin(), h_new.end());
    return x_new;
  });
}

}  // namespace

void register_training(LoweringTable& t) {
  t["ai.onnx.preview.training.Adagrad"] = lower_adagrad;
  t["ai.onnx.preview.training.Adam"] = lower_adam;
  t["ai.onnx.preview.training.Momentum"] = lower_momentum;
}

}  // namespace vkgraph::onnx_import
