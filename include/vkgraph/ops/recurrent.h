#pragma once
// ONNX RNN, GRU and LSTM (src/ops/recurrent): float32 or float16 tensors, every direction,
// sequence lengths, initial states, peepholes, clip and the activations ONNX allows. The input
// projection of all steps is one GEMM; the recurrence is one dispatch for all steps
// (docs/notes/recurrent.md).
#include <cstdint>
#include <optional>
#include <vector>

#include "vkgraph/graph/compute_graph.h"

namespace vkgraph::ops {

enum class RecurrentCell { Rnn, Gru, Lstm };
enum class RecurrentDirection { Forward, Reverse, Bidirectional };

// The activation functions ONNX's recurrent ops take, with the codes recurrent.comp uses.
enum class RecurrentActivation : int32_t {
  Relu = 0,
  Tanh,
  Sigmoid,
  Affine,           // alpha * x + beta
  LeakyRelu,        // alpha
  ThresholdedRelu,  // alpha
  ScaledTanh,       // alpha * tanh(beta * x)
  HardSigmoid,      // clamp(alpha * x + beta, 0, 1)
  Elu,              // alpha
  Softsign,
  Softplus,
};
struct RecurrentFunction {
  RecurrentActivation kind = RecurrentActivation::Tanh;
  float alpha = 0.f, beta = 0.f;
};

// The functions a cell applies, per direction: RNN f; GRU f, g; LSTM f, g, h.
size_t recurrent_function_count(RecurrentCell cell);

struct RecurrentParams {
  RecurrentCell cell = RecurrentCell::Lstm;
  RecurrentDirection direction = RecurrentDirection::Forward;
  int64_t hidden_size = 0;
  // recurrent_function_count(cell) per direction, forward direction first; empty: ONNX's
  // defaults (Sigmoid for gates, Tanh otherwise; RNN Tanh).
  std::vector<RecurrentFunction> activations;
  std::optional<float> clip;         // bounds every gate's pre-activation to [-clip, clip]
  bool input_forget = false;         // LSTM: couple the forget gate to the input gate
  bool linear_before_reset = false;  // GRU
  int64_t layout = 0;  // 0: X [T, B, I], Y [T, dirs, B, H]; 1: X [B, T, I], Y [B, T, dirs, H]
};

// Shapes as ONNX gives them: W [dirs, G*H, I], R [dirs, G*H, H], B [dirs, 2*G*H],
// sequence_lens [B] Int32, initial_h / initial_c like Y_h, peepholes [dirs, 3*H] (LSTM).
struct RecurrentInputs {
  TensorRef x, w, r;
  std::optional<TensorRef> b, sequence_lens, initial_h, initial_c, peepholes;
};

// Y; Y_h ([dirs, B, H], layout 1: [B, dirs, H]); Y_c for LSTM (invalid otherwise). Steps past
// a row's sequence length leave Y zero and the state as the last real step left it.
struct RecurrentOutputs {
  TensorRef y, y_h, y_c;
};

RecurrentOutputs recurrent(ComputeGraph& g, const RecurrentInputs& inputs,
                           const RecurrentParams& params);

}  // namespace vkgraph::ops
