#version 450
// ONNX RNN, GRU and LSTM recurrences as one persistent dispatch: workgroup (b, dir) runs every
// time step of batch row b in direction dir, with the hidden state in shared memory, so a
// sequence of T steps costs one dispatch, not T. The input projection X Wᵀ of all steps is
// one GEMM before this (P below); here each step adds H_{t-1} Rᵀ, the biases and peepholes
// and applies the gates. Invocation `lid` owns hidden units lid, lid + WG, ... of its row.
//
// STEPWISE instead runs one step per dispatch (p.step), spread over workgroups (unit chunk,
// direction, batch chunk) that read h_{t-1} of their rows from a ping-pong state buffer: for
// large H, one workgroup per row would do the whole H x G*H product of a step on one SM.
// GRU without linear_before_reset takes two dispatches per step (p.phase 0: z, r and r ⊙ h;
// phase 1: the h gate).
//
// CELL_RNN, CELL_GRU or CELL_LSTM picks the cell; G is its gate count.
#include "common.glsl"
#include "activation.glsl"

#if defined(CELL_LSTM)
#define G 4
#elif defined(CELL_GRU)
#define G 3
#else
#define G 1
#endif
// Shared floats: two hidden-state buffers (read h_{t-1}, write h_t) and, for GRU, r ⊙ h_{t-1}.
// 16 KiB, the least every Vulkan device offers; recurrent.cpp checks H against it.
#define SHARED_FLOATS 4096

layout(std430, binding = 0) readonly buffer Proj { ELEM proj[]; };       // [rows, dirs*G*H]
layout(std430, binding = 1) readonly buffer RecT { ELEM rt[]; };         // [dirs, H, G*H]
layout(std430, binding = 2) readonly buffer Bias { ELEM bias[]; };       // [dirs, 2*G*H]
layout(std430, binding = 3) readonly buffer Lens { int seq_lens[]; };    // [B]
layout(std430, binding = 4) readonly buffer H0 { ELEM h0[]; };           // like Y_h
layout(std430, binding = 5) readonly buffer C0 { ELEM c0[]; };           // like Y_c
layout(std430, binding = 6) readonly buffer Peep { ELEM peep[]; };       // [dirs, 3*H]
layout(std430, binding = 7) writeonly buffer Y { ELEM y[]; };
layout(std430, binding = 8) writeonly buffer Yh { ELEM y_h[]; };
layout(std430, binding = 9) writeonly buffer Yc { ELEM y_c[]; };
// Per (dir, b, unit), float32 whatever ELEM is: the LSTM cell state, the GRU update gate
// between its two phases. Each element is touched by one invocation only.
layout(std430, binding = 10) buffer Cell { float cell[]; };
#if STEPWISE
// Float32 [3, dirs, B, H]: h after even steps, h after odd steps, GRU's r ⊙ h_{t-1}.
layout(std430, binding = 11) buffer State { float state[]; };
#endif

layout(push_constant) uniform Params {
  int steps;
  int batch;
  int hidden;
  int dirs;
  int layout1;       // 1: X [B, T, I], Y [B, T, dirs, H], states [B, dirs, H]
  int reverse;       // direction 0 runs backwards (direction="reverse")
  int input_forget;  // LSTM: f = 1 - i
  int linear_before_reset;  // GRU
  float clip;        // bound on every gate's pre-activation; +inf without clip
  int act[6];        // per direction 3 slots (f, g, h), codes as in recurrent.cpp
  float alpha[6];
  float beta[6];
#if STEPWISE
  int step;   // s: the step of every row (t = s forward, len - 1 - s backward)
  int phase;  // GRU without linear_before_reset: 0 z, r and r ⊙ h; 1 the h gate
#endif
} p;

shared float sh[SHARED_FLOATS];

#define A_RELU 0
#define A_TANH 1
#define A_SIGMOID 2
#define A_AFFINE 3
#define A_LEAKY_RELU 4
#define A_THRESHOLDED_RELU 5
#define A_SCALED_TANH 6
#define A_HARD_SIGMOID 7
#define A_ELU 8
#define A_SOFTSIGN 9
#define A_SOFTPLUS 10

// ONNX's activation `code` with its alpha and beta.
float activation(int i, float x) {
  int code = p.act[i];
  float a = p.alpha[i], b = p.beta[i];
  if (code == A_RELU) return max_nan(x, 0.0);
  if (code == A_TANH) return safe_tanh(x);
  if (code == A_SIGMOID) return 1.0 / (1.0 + exp(-x));
  if (code == A_AFFINE) return a * x + b;
  if (code == A_LEAKY_RELU) return x >= 0.0 ? x : a * x;
  if (code == A_THRESHOLDED_RELU) return x > a ? x : 0.0;
  if (code == A_SCALED_TANH) return a * safe_tanh(b * x);
  if (code == A_HARD_SIGMOID) return clamp_nan(a * x + b, 0.0, 1.0);
  if (code == A_ELU) return x >= 0.0 ? x : a * (exp(x) - 1.0);
  if (code == A_SOFTSIGN) return x / (1.0 + abs(x));
  // Softplus without overflow: log(1 + e^x) = max(x, 0) + log(1 + e^-|x|).
  return max_nan(x, 0.0) + log(1.0 + exp(-abs(x)));
}

// Activation `slot` (f, g, h) of direction `dir` on a gate's pre-activation, clipped first.
float gate(int slot, int dir, float x) {
  return activation(dir * 3 + slot, clamp_nan(x, -p.clip, p.clip));
}

int y_index(int t, int dir, int b, int j) {
  int H = p.hidden;
  return p.layout1 != 0 ? ((b * p.steps + t) * p.dirs + dir) * H + j
                        : ((t * p.dirs + dir) * p.batch + b) * H + j;
}
int state_index(int dir, int b, int j) {
  return p.layout1 != 0 ? (b * p.dirs + dir) * p.hidden + j : (dir * p.batch + b) * p.hidden + j;
}
// Start of the projection of step t, direction dir, gate 0.
int proj_base(int t, int dir, int b) {
  int row = p.layout1 != 0 ? b * p.steps + t : t * p.batch + b;
  return (row * p.dirs + dir) * G * p.hidden;
}
// Input bias plus recurrent bias of gate g, unit j (GRU's h gate takes them apart).
float wb(int dir, int g, int j) { return float(bias[dir * 2 * G * p.hidden + g * p.hidden + j]); }
float rb(int dir, int g, int j) {
  return float(bias[dir * 2 * G * p.hidden + (G + g) * p.hidden + j]);
}

#if STEPWISE
int slot_index(int slot, int dir, int b, int j) {
  return ((slot * p.dirs + dir) * p.batch + b) * p.hidden + j;
}
// h_{t-1} of (dir, b, j) at step s: the initial state first, then the previous step's slot.
float h_prev(int s, int dir, int b, int j) {
  return s == 0 ? float(h0[state_index(dir, b, j)]) : state[slot_index(s & 1, dir, b, j)];
}

void main() {
  const int H = p.hidden;
  const int GH = G * H;
  const int s = p.step;
  const int dir = int(gl_WorkGroupID.y);
  const int rows = int(gl_WorkGroupSize.y);
  const int b0 = int(gl_WorkGroupID.z) * rows;
  const int n_rows = min(rows, p.batch - b0);
  const int threads = int(gl_WorkGroupSize.x * gl_WorkGroupSize.y);
  const int lid = int(gl_LocalInvocationIndex);
#if defined(CELL_GRU)
  const bool second = p.linear_before_reset == 0 && p.phase == 1;
#else
  const bool second = false;
#endif
  // The rows' h_{t-1} (GRU's second phase: r ⊙ h_{t-1}), which every unit's product reads.
  for (int e = lid; e < n_rows * H; e += threads) {
    const int r = e / H, k = e - r * H;
    sh[e] = second ? state[slot_index(2, dir, b0 + r, k)] : h_prev(s, dir, b0 + r, k);
  }
  barrier();
  const int j = int(gl_GlobalInvocationID.x);
  const int row = int(gl_LocalInvocationID.y);
  const int b = b0 + row;
  if (j >= H || row >= n_rows) return;
  const int len = clamp(seq_lens[b], 0, p.steps);
  const bool backward = dir == 1 || p.reverse != 0;
  const int t = backward ? len - 1 - s : s;
  const int cell_at = (dir * p.batch + b) * H + j;
  const int hs = row * H;  // the row's h_{t-1} in sh
  const bool last = s == p.steps - 1;
  const int next_slot = slot_index((s + 1) & 1, dir, b, j);
#if defined(CELL_GRU)
  const bool lbr = p.linear_before_reset != 0;
  if (!lbr && p.phase == 0) {
    // Update and reset gates; r ⊙ h_{t-1} for the second phase.
    if (s >= len) return;
    const int pb = proj_base(t, dir, b);
    float az = float(proj[pb + j]) + wb(dir, 0, j) + rb(dir, 0, j);
    float ar = float(proj[pb + H + j]) + wb(dir, 1, j) + rb(dir, 1, j);
    for (int k = 0; k < H; ++k) {
      const float hk = sh[hs + k];
      const int r0 = (dir * H + k) * GH + j;
      az += hk * float(rt[r0]);
      ar += hk * float(rt[r0 + H]);
    }
    cell[cell_at] = gate(0, dir, az);
    state[slot_index(2, dir, b, j)] = gate(0, dir, ar) * sh[hs + j];
    return;
  }
#endif
  const float hp = second ? h_prev(s, dir, b, j) : sh[hs + j];
#if defined(CELL_LSTM)
  const float c_prev = s == 0 ? float(c0[state_index(dir, b, j)]) : cell[cell_at];
#endif
  float h = hp;
  if (s >= len) {
    // Past this row's length: Y is zero at step s (the steps len .. T-1 in both directions)
    // and the state carries on.
    y[y_index(s, dir, b, j)] = ELEM(0.0);
#if defined(CELL_LSTM)
    cell[cell_at] = c_prev;
#endif
  } else {
    const int pb = proj_base(t, dir, b);
#if defined(CELL_GRU)
    if (lbr) {
      float az = float(proj[pb + j]) + wb(dir, 0, j) + rb(dir, 0, j);
      float ar = float(proj[pb + H + j]) + wb(dir, 1, j) + rb(dir, 1, j);
      float ah = 0.0;
      for (int k = 0; k < H; ++k) {
        const float hk = sh[hs + k];
        const int r0 = (dir * H + k) * GH + j;
        az += hk * float(rt[r0]);
        ar += hk * float(rt[r0 + H]);
        ah += hk * float(rt[r0 + 2 * H]);
      }
      const float z = gate(0, dir, az);
      const float pre = float(proj[pb + 2 * H + j]) + wb(dir, 2, j) + gate(0, dir, ar) * (ah + rb(dir, 2, j));
      h = (1.0 - z) * gate(1, dir, pre) + z * hp;
    } else {
      float pre = float(proj[pb + 2 * H + j]) + wb(dir, 2, j) + rb(dir, 2, j);
      for (int k = 0; k < H; ++k) pre += sh[hs + k] * float(rt[(dir * H + k) * GH + 2 * H + j]);
      const float z = cell[cell_at];
      h = (1.0 - z) * gate(1, dir, pre) + z * hp;
    }
#else
    float a[G];
    for (int g = 0; g < G; ++g) a[g] = float(proj[pb + g * H + j]) + wb(dir, g, j) + rb(dir, g, j);
    for (int k = 0; k < H; ++k) {
      const float hk = sh[hs + k];
      const int r0 = (dir * H + k) * GH + j;
      for (int g = 0; g < G; ++g) a[g] += hk * float(rt[r0 + g * H]);
    }
#if defined(CELL_LSTM)
    const int pp = dir * 3 * H + j;
    const float i_gate = gate(0, dir, a[0] + float(peep[pp]) * c_prev);
    const float f_gate = p.input_forget != 0 ? 1.0 - i_gate
                                             : gate(0, dir, a[2] + float(peep[pp + 2 * H]) * c_prev);
    const float c = f_gate * c_prev + i_gate * gate(1, dir, a[3]);
    const float o_gate = gate(0, dir, a[1] + float(peep[pp + H]) * c);
    h = o_gate * activation(dir * 3 + 2, c);
    cell[cell_at] = c;
#else
    h = gate(0, dir, a[0]);
#endif
#endif
    y[y_index(t, dir, b, j)] = ELEM(h);
  }
  state[next_slot] = h;
  if (last) {
    y_h[state_index(dir, b, j)] = ELEM(h);
#if defined(CELL_LSTM)
    y_c[state_index(dir, b, j)] = ELEM(cell[cell_at]);
#endif
  }
}
#else
void main() {
  const int H = p.hidden;
  const int GH = G * H;
  const int b = int(gl_WorkGroupID.x);
  const int dir = int(gl_WorkGroupID.y);
  const int lid = int(gl_LocalInvocationID.x);
  const int wg = int(gl_WorkGroupSize.x);
  const bool backward = dir == 1 || p.reverse != 0;
  const int len = clamp(seq_lens[b], 0, p.steps);
  const int cell_base = (dir * p.batch + b) * H;

  for (int j = lid; j < H; j += wg) {
    sh[j] = float(h0[state_index(dir, b, j)]);
#if defined(CELL_LSTM)
    cell[cell_base + j] = float(c0[state_index(dir, b, j)]);
#endif
  }
  barrier();

  int cur = 0;  // sh[cur*H ...] holds h_{t-1}
  for (int s = 0; s < len; ++s) {
    const int t = backward ? len - 1 - s : s;
    const int pb = proj_base(t, dir, b);
    const int prev = cur * H, next = (1 - cur) * H;
#if defined(CELL_GRU)
    const int rh = 2 * H;
    // Update and reset gates; with linear_before_reset also the h gate's recurrent product,
    // since it multiplies r after the product.
    for (int j = lid; j < H; j += wg) {
      float az = float(proj[pb + j]) + wb(dir, 0, j) + rb(dir, 0, j);
      float ar = float(proj[pb + H + j]) + wb(dir, 1, j) + rb(dir, 1, j);
      float ah = 0.0;
      const bool lbr = p.linear_before_reset != 0;
      for (int k = 0; k < H; ++k) {
        float hk = sh[prev + k];
        int r0 = (dir * H + k) * GH + j;
        az += hk * float(rt[r0]);
        ar += hk * float(rt[r0 + H]);
        if (lbr) ah += hk * float(rt[r0 + 2 * H]);
      }
      float z = gate(0, dir, az);
      float r = gate(0, dir, ar);
      if (lbr) {
        float pre = float(proj[pb + 2 * H + j]) + wb(dir, 2, j) + r * (ah + rb(dir, 2, j));
        float hh = gate(1, dir, pre);
        float h = (1.0 - z) * hh + z * sh[prev + j];
        sh[next + j] = h;
        y[y_index(t, dir, b, j)] = ELEM(h);
      } else {
        sh[rh + j] = r * sh[prev + j];
        cell[cell_base + j] = z;
      }
    }
    if (p.linear_before_reset == 0) {
      barrier();  // r ⊙ h_{t-1} complete
      for (int j = lid; j < H; j += wg) {
        float pre = float(proj[pb + 2 * H + j]) + wb(dir, 2, j) + rb(dir, 2, j);
        for (int k = 0; k < H; ++k) pre += sh[rh + k] * float(rt[(dir * H + k) * GH + 2 * H + j]);
        float z = cell[cell_base + j];
        float h = (1.0 - z) * gate(1, dir, pre) + z * sh[prev + j];
        sh[next + j] = h;
        y[y_index(t, dir, b, j)] = ELEM(h);
      }
    }
#else
    for (int j = lid; j < H; j += wg) {
      float a[G];
      for (int g = 0; g < G; ++g) a[g] = float(proj[pb + g * H + j]) + wb(dir, g, j) + rb(dir, g, j);
      for (int k = 0; k < H; ++k) {
        float hk = sh[prev + k];
        int r0 = (dir * H + k) * GH + j;
        for (int g = 0; g < G; ++g) a[g] += hk * float(rt[r0 + g * H]);
      }
#if defined(CELL_LSTM)
      // Gates in ONNX order i, o, f, c; peepholes i, o, f.
      const int pp = dir * 3 * H + j;
      float c_prev = cell[cell_base + j];
      float i_gate = gate(0, dir, a[0] + float(peep[pp]) * c_prev);
      float f_gate = p.input_forget != 0 ? 1.0 - i_gate
                                         : gate(0, dir, a[2] + float(peep[pp + 2 * H]) * c_prev);
      float c = f_gate * c_prev + i_gate * gate(1, dir, a[3]);
      float o_gate = gate(0, dir, a[1] + float(peep[pp + H]) * c);
      float h = o_gate * activation(dir * 3 + 2, c);
      cell[cell_base + j] = c;
#else
      float h = gate(0, dir, a[0]);
#endif
      sh[next + j] = h;
      y[y_index(t, dir, b, j)] = ELEM(h);
    }
#endif
    barrier();  // h_t complete, h_{t-1} no longer read
    cur = 1 - cur;
  }

  // Steps past this row's length: Y is zero there (for both directions the unwritten steps
  // are len .. T-1), and the state stays what the last real step left.
  for (int t = len; t < p.steps; ++t)
    for (int j = lid; j < H; j += wg) y[y_index(t, dir, b, j)] = ELEM(0.0);
  for (int j = lid; j < H; j += wg) {
    y_h[state_index(dir, b, j)] = ELEM(sh[cur * H + j]);
#if defined(CELL_LSTM)
    y_c[state_index(dir, b, j)] = ELEM(cell[cell_base + j]);
#endif
  }
}
#endif
