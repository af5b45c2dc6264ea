// RNN, GRU and LSTM: the input projection of every step and direction is one linear() (a GEMM
// over [steps * batch, input] with W read in place), R is transposed once so that the units
// of a workgroup read consecutive weights, and one persistent dispatch runs the recurrence:
// a workgroup per (batch row, direction) loops over the steps with its hidden state in shared
// memory (recurrent.comp); for large H, one dispatch per step spread over the hidden units.
// Absent optional inputs become zero constants.
#include "vkgraph/ops/recurrent.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "shape_ops.h"
#include "vkgraph/ops/data_movement.h"
#include "vkgraph/ops/matmul.h"

namespace vkgraph::ops {

namespace {

// recurrent.comp's shared array: two hidden-state buffers, plus r ⊙ h for GRU.
constexpr int64_t kSharedFloats = 4096;
constexpr size_t kSlots = 3;  // activation slots per direction in the push constants

const char* op_name(RecurrentCell cell) {
  return cell == RecurrentCell::Lstm ? "lstm" : cell == RecurrentCell::Gru ? "gru" : "rnn";
}

int64_t gate_count(RecurrentCell cell) {
  return cell == RecurrentCell::Lstm ? 4 : cell == RecurrentCell::Gru ? 3 : 1;
}

std::vector<RecurrentFunction> default_functions(RecurrentCell cell) {
  using A = RecurrentActivation;
  if (cell == RecurrentCell::Rnn) return {{A::Tanh}};
  if (cell == RecurrentCell::Gru) return {{A::Sigmoid}, {A::Tanh}};
  return {{A::Sigmoid}, {A::Tanh}, {A::Tanh}};
}

void check_shape(TensorRef t, ComputeGraph& g, const Shape& want, const std::string& op,
                 const char* what) {
  const Shape got = g.info(t).shape;
  if (got != want)
    throw Error(ErrorKind::InvalidArgument,
                op + ": " + what + " " + shape_str(got) + " must be " + shape_str(want));
}

TensorRef zeros(ComputeGraph& g, DType dtype, const Shape& shape) {
  return g.add_constant(HostTensor(dtype, shape));
}

}  // namespace

size_t recurrent_function_count(RecurrentCell cell) {
  return default_functions(cell).size();
}

RecurrentOutputs recurrent(ComputeGraph& g, const RecurrentInputs& in, const RecurrentParams& p) {
  const std::string op = op_name(p.cell);
  const TensorInfo xi = g.info(in.x);
  std::vector<TensorRef> same{in.w, in.r};
  for (const auto& t : {in.b, in.initial_h, in.initial_c, in.peepholes})
    if (t) same.push_back(*t);
  DType dtype = float_dtype(g, in.x, {}, op);
  for (TensorRef t : same)
    if (g.info(t).dtype != dtype)
      throw Error(ErrorKind::InvalidArgument,
                  op + ": inputs mix " + dtype_name(dtype) + " and " + dtype_name(g.info(t).dtype));
  if (p.layout != 0 && p.layout != 1)
    throw Error(ErrorKind::InvalidArgument,
                op + ": layout " + std::to_string(p.layout) + " is not 0 or 1");
  if (xi.shape.size() != 3)
    throw Error(ErrorKind::InvalidArgument,
                op + ": X " + shape_str(xi.shape) + " must be 3-D [steps, batch, input]");
  const bool batch_first = p.layout == 1;
  const int64_t steps = xi.shape[batch_first ? 1 : 0], batch = xi.shape[batch_first ? 0 : 1];
  const int64_t input = xi.shape[2], hidden = p.hidden_size;
  const int64_t dirs = p.direction == RecurrentDirection::Bidirectional ? 2 : 1;
  const int64_t gates = gate_count(p.cell);
  if (hidden < 1)
    throw Error(ErrorKind::InvalidArgument,
                op + ": hidden_size " + std::to_string(hidden) + " must be positive");
  // The persistent kernel holds the hidden state in shared memory (checked first: it also
  // bounds every size below).
  const int64_t max_hidden = kSharedFloats / (p.cell == RecurrentCell::Gru ? 3 : 2);
  if (hidden > max_hidden)
    throw Error(ErrorKind::Unsupported, op + ": hidden_size " + std::to_string(hidden) +
                                            " above the recurrent kernel's " +
                                            std::to_string(max_hidden));
  if (steps < 1 || batch < 1 || input < 1)
    throw Error(ErrorKind::InvalidArgument, op + ": X " + shape_str(xi.shape) + " is empty");
  const int64_t gh = checked_mul(gates, hidden, op);
  check_shape(in.w, g, {dirs, gh, input}, op, "W");
  check_shape(in.r, g, {dirs, gh, hidden}, op, "R");
  const Shape state = batch_first ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  if (in.b) check_shape(*in.b, g, {dirs, 2 * gh}, op, "B");
  if (in.initial_h) check_shape(*in.initial_h, g, state, op, "initial_h");
  if (in.initial_c) {
    if (p.cell != RecurrentCell::Lstm)
      throw Error(ErrorKind::InvalidArgument, op + ": initial_c is for LSTM only");
    check_shape(*in.initial_c, g, state, op, "initial_c");
  }
  if (in.peepholes) {
    if (p.cell != RecurrentCell::Lstm)
      throw Error(ErrorKind::InvalidArgument, op + ": peepholes are for LSTM only");
    check_shape(*in.peepholes, g, {dirs, 3 * hidden}, op, "P");
  }
  if (in.sequence_lens) {
    require_dtype(g, *in.sequence_lens, DType::Int32, op);
    check_shape(*in.sequence_lens, g, {batch}, op, "sequence_lens");
    if (const HostTensor* v = g.constant_value(*in.sequence_lens))
      for (int64_t i = 0; i < v->numel(); ++i)
        if (v->as_int(i) < 0 || v->as_int(i) > steps)
          throw Error(ErrorKind::InvalidArgument,
                      op + ": sequence length " + std::to_string(v->as_int(i)) + " outside [0, " +
                          std::to_string(steps) + "]");
  }
  std::vector<RecurrentFunction> functions = p.activations;
  const size_t per_dir = recurrent_function_count(p.cell);
  if (functions.empty())
    for (int64_t d = 0; d < dirs; ++d)
      for (const RecurrentFunction& f : default_functions(p.cell)) functions.push_back(f);
  if (functions.size() != per_dir * static_cast<size_t>(dirs))
    throw Error(ErrorKind::InvalidArgument, op + ": " + std::to_string(functions.size()) +
                                                " activations given, " +
                                                std::to_string(per_dir * dirs) + " expected");
  if (batch > 65535)
    throw Error(ErrorKind::Unsupported,
                op + ": batch " + std::to_string(batch) + " above 65535 workgroups");
  const int64_t rows = checked_mul(steps, batch, op);
  checked_i32(checked_mul(rows, checked_mul(dirs, gh, op), op), op, "projection size");
  checked_i32(checked_mul(rows, checked_mul(dirs, hidden, op), op), op, "output size");
  checked_i32(checked_mul(dirs, checked_mul(gh, hidden, op), op), op, "weight size");

  // X Wᵀ of every step and direction: [rows, dirs * G * H], rows in X's order.
  TensorRef proj = linear(g, g.add_view(in.x, {rows, input}), g.add_view(in.w, {dirs * gh, input}));
  TensorRef rt = transpose(g, in.r, {0, 2, 1});
  TensorRef bias = in.b ? *in.b : zeros(g, dtype, {dirs, 2 * gh});
  TensorRef lens = in.sequence_lens
                       ? *in.sequence_lens
                       : g.add_constant(HostTensor::from(
                             DType::Int32, {batch}, std::vector<int32_t>(batch, int32_t(steps))));
  TensorRef h0 = in.initial_h ? *in.initial_h : zeros(g, dtype, state);
  const bool lstm = p.cell == RecurrentCell::Lstm;
  TensorRef c0 = in.initial_c ? *in.initial_c : zeros(g, dtype, lstm ? state : Shape{1});
  TensorRef peep = in.peepholes ? *in.peepholes : zeros(g, dtype, {lstm ? dirs : 1, 3 * hidden});

  RecurrentOutputs out;
  out.y = g.add_tensor(
      batch_first ? Shape{batch, steps, dirs, hidden} : Shape{steps, dirs, batch, hidden}, dtype);
  out.y_h = g.add_tensor(state, dtype);
  // Non-LSTM cells bind a one-element stand-in the kernel never writes.
  TensorRef y_c = g.add_tensor(lstm ? state : Shape{1}, dtype);
  if (lstm) out.y_c = y_c;
  TensorRef cell = g.add_tensor({dirs * batch * hidden}, DType::Float32);

  PushConstants pc;
  pc.add(int32_t(steps))
      .add(int32_t(batch))
      .add(int32_t(hidden))
      .add(int32_t(dirs))
      .add(int32_t(p.layout))
      .add(int32_t(p.direction == RecurrentDirection::Reverse))
      .add(int32_t(p.input_forget))
      .add(int32_t(p.linear_before_reset))
      .add(p.clip ? std::abs(*p.clip) : std::numeric_limits<float>::infinity());
  std::vector<int32_t> codes(2 * kSlots, 0);
  std::vector<float> alphas(2 * kSlots, 0.f), betas(2 * kSlots, 0.f);
  for (size_t i = 0; i < functions.size(); ++i) {
    const size_t at = (i / per_dir) * kSlots + i % per_dir;
    codes[at] = static_cast<int32_t>(functions[i].kind);
    alphas[at] = functions[i].alpha;
    betas[at] = functions[i].beta;
  }
  pc.add_array(codes, codes.size()).add_array(alphas, alphas.size()).add_array(betas, betas.size());

  std::vector<Binding> bindings = {
      {proj, Access::Read}, {rt, Access::Read},       {bias, Access::Read},
      {lens, Access::Read}, {h0, Access::Read},       {c0, Access::Read},
      {peep, Access::Read}, {out.y, Access::Write},   {out.y_h, Access::Write},
      {y_c, Access::Write}, {cell, Access::ReadWrite}};
  // One workgroup per (row, direction) does a step's whole H x G*H product on one SM, which
  // bounds large H (H200, H 512 batch 8: 35-68 us a step); there, one dispatch per step
  // spread over the hidden units wins despite the dispatches. Knob "recurrent.stepwise".
  const bool stepwise = tuned(g, "recurrent.stepwise", hidden >= 256 ? 1 : 0) != 0;
  if (!stepwise) {
    DispatchDesc d;
    d.shader = "recurrent_" + op + "_" + shader_suffix(dtype);
    d.bindings = std::move(bindings);
    d.groups = {static_cast<uint32_t>(batch), static_cast<uint32_t>(dirs), 1};
    const uint32_t local = static_cast<uint32_t>(std::min<int64_t>(256, (hidden + 31) / 32 * 32));
    d.local = {tuned(g, "recurrent.local", local), 1, 1};
    d.push = pc.take();
    d.label = op;
    g.add_dispatch(std::move(d));
    return out;
  }
  // Stepwise: workgroups of `units` hidden units x `group_rows` batch rows (at most the 128
  // invocations Vulkan guarantees), whose h_{t-1} fit the kernel's shared array.
  const uint32_t units = std::clamp<uint32_t>(tuned(g, "recurrent.units", 16), 1, 128);
  const int64_t group_rows =
      std::clamp<int64_t>(std::min<int64_t>(128 / units, kSharedFloats / hidden), 1, batch);
  bindings.push_back(
      {g.add_tensor({3 * dirs * batch * hidden}, DType::Float32), Access::ReadWrite});
  const std::vector<uint8_t> common = pc.take();
  const bool two_phases = p.cell == RecurrentCell::Gru && !p.linear_before_reset;
  for (int64_t step = 0; step < steps; ++step)
    for (int32_t phase = 0; phase < (two_phases ? 2 : 1); ++phase) {
      DispatchDesc d;
      d.shader = "recurrent_step_" + op + "_" + shader_suffix(dtype);
      d.bindings = bindings;
      d.groups = {static_cast<uint32_t>(shapes::ceil_div(hidden, units)),
                  static_cast<uint32_t>(dirs),
                  static_cast<uint32_t>(shapes::ceil_div(batch, group_rows))};
      d.local = {units, static_cast<uint32_t>(group_rows), 1};
      PushConstants step_pc;
      step_pc.add(int32_t(step)).add(phase);
      d.push = common;
      const std::vector<uint8_t> tail = step_pc.take();
      d.push.insert(d.push.end(), tail.begin(), tail.end());
      d.label = op + " step " + std::to_string(step);
      g.add_dispatch(std::move(d));
    }
  return out;
}

}  // namespace vkgraph::ops
