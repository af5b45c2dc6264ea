#version 450
// Resize of the two spatial dims of NCHW, nearest (any element size), bilinear or bicubic
// (f32, f16). ONNX maps each output coordinate back to the input through the coordinate
// transformation mode; nearest then rounds by nearest_mode, linear blends the two neighbours
// (clamped to the edge, which equals ONNX's edge padding), cubic the four on each axis with
// Keys' kernel of parameter A, taps beyond the edge reading the edge (or, with
// exclude_outside, dropped and the remaining weights renormalised). tf_crop_and_resize maps
// the output onto a region of interest and writes the extrapolation value where it falls
// outside the image.
#include "common.glsl"
#ifdef MODE_NEAREST
#include "shape_ops.glsl"
#endif

// 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel, 4 tf_half_pixel_for_nn,
// 5 tf_crop_and_resize
layout(constant_id = 3) const int COORD = 0;
// 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil
layout(constant_id = 4) const int NEAREST = 0;
layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  int n;
  int in_h;
  int in_w;
  int out_h;
  int out_w;
  float scale_h;  // output / input, or the model's explicit scale
  float scale_w;
  int exact;  // bit 0 (H), bit 1 (W): the scale is exactly out / in, nearest rounds exactly
  float cubic_a;
  int exclude_outside;
  float roi_start_h, roi_start_w, roi_end_h, roi_end_w;  // tf_crop_and_resize
  float extrapolation;                                   // float modes
  uint extrapolation_lo, extrapolation_hi;               // nearest: the value's bits
} p;

float source_coord(int o, int in_len, int out_len, float scale, float roi_start, float roi_end) {
  float c = float(o);
  if (COORD == 5) {
    float last = float(in_len - 1);
    return out_len > 1 ? roi_start * last + c * (roi_end - roi_start) * last / float(out_len - 1)
                       : 0.5 * (roi_start + roi_end) * last;
  }
  if (COORD == 1) return c / scale;
  if (COORD == 4) return (c + 0.5) / scale;
  // ONNX takes the resized length as in * scale, which a given scale makes fractional.
  float resized_len = float(in_len) * scale;
  if (COORD == 2)
    return resized_len > 1.0 ? c * float(in_len - 1) / (resized_len - 1.0) : 0.0;
  if (COORD == 3 && out_len <= 1) return 0.0;
  return (c + 0.5) / scale - 0.5;
}

#ifdef MODE_NEAREST
// floor(a / b) for b > 0 with non-negative operands only: GLSL leaves / and % of negative
// numbers undefined.
int floor_div(int a, int b) { return a >= 0 ? a / b : -((b - 1 - a) / b); }

// The source index when the scale is exactly out / in. ONNX's coordinate is then num / den in
// integers, often a tie (align_corners 4 -> 7: 3 / 6), and float division (2.5 ulp on NVIDIA)
// lands beside ties and near-ties alike; integers decide both exactly. The host guarantees
// that 2 num + den fits an int.
int nearest_exact(int o, int in_len, int out_len) {
  int num = 0, den = 1;
  if (COORD == 1) {
    num = o * in_len;
    den = out_len;
  } else if (COORD == 2) {
    if (out_len > 1) num = o * (in_len - 1), den = out_len - 1;
  } else if (COORD == 4) {
    num = (2 * o + 1) * in_len;
    den = 2 * out_len;
  } else if (COORD == 0 || out_len > 1) {
    num = (2 * o + 1) * in_len - out_len;
    den = 2 * out_len;
  }
  int r = NEAREST == 0 ? -floor_div(den - 2 * num, 2 * den)
        : NEAREST == 1 ? floor_div(2 * num + den, 2 * den)
        : NEAREST == 2 ? floor_div(num, den) : -floor_div(-num, den);
  return clamp(r, 0, in_len - 1);
}

// With a scale the model gave, ONNX's arithmetic is float too; a coordinate within a few ulps
// of a half-integer is taken as the tie float division missed.
int nearest(float c_in, int in_len) {
  float t = round(c_in * 2.0);
  float c = abs(c_in * 2.0 - t) <= 1e-6 * max(1.0, abs(t)) ? t * 0.5 : c_in;
  float r = NEAREST == 0 ? ceil(c - 0.5) : NEAREST == 1 ? floor(c + 0.5)
          : NEAREST == 2 ? floor(c) : ceil(c);
  return clamp(int(r), 0, in_len - 1);
}
#endif

#ifdef MODE_CUBIC
// Weights of taps floor(c) - 1 .. floor(c) + 2 at fraction t, for one axis of `len`.
vec4 cubic_weights(float t, int first, int len) {
  float a = p.cubic_a;
  vec4 d = vec4(t + 1.0, t, 1.0 - t, 2.0 - t);  // distance of each tap
  vec4 w;
  for (int k = 0; k < 4; ++k) {
    float x = d[k];
    w[k] = x <= 1.0 ? ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
                    : ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    if (p.exclude_outside != 0 && (first + k < 0 || first + k >= len)) w[k] = 0.0;
  }
  return p.exclude_outside != 0 ? w / (w.x + w.y + w.z + w.w) : w;
}
#endif

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int ox = i % p.out_w;
  int oy = (i / p.out_w) % p.out_h;
  int plane = (i / (p.out_w * p.out_h)) * p.in_h * p.in_w;
  float cy = source_coord(oy, p.in_h, p.out_h, p.scale_h, p.roi_start_h, p.roi_end_h);
  float cx = source_coord(ox, p.in_w, p.out_w, p.scale_w, p.roi_start_w, p.roi_end_w);
  if (COORD == 5 && (cy < 0.0 || cy > float(p.in_h - 1) || cx < 0.0 || cx > float(p.in_w - 1))) {
#ifdef MODE_NEAREST
    y[i] = TO_ELEM(value_from_words(p.extrapolation_lo, p.extrapolation_hi));
#else
    y[i] = ELEM(p.extrapolation);
#endif
    return;
  }
#ifdef MODE_NEAREST
  int sy = (p.exact & 1) != 0 ? nearest_exact(oy, p.in_h, p.out_h) : nearest(cy, p.in_h);
  int sx = (p.exact & 2) != 0 ? nearest_exact(ox, p.in_w, p.out_w) : nearest(cx, p.in_w);
  y[i] = x[plane + sy * p.in_w + sx];
#elif defined(MODE_CUBIC)
  int fy = int(floor(cy)), fx = int(floor(cx));
  vec4 wy = cubic_weights(cy - float(fy), fy - 1, p.in_h);
  vec4 wx = cubic_weights(cx - float(fx), fx - 1, p.in_w);
  float acc = 0.0;
  for (int ky = 0; ky < 4; ++ky) {
    int row = plane + clamp(fy - 1 + ky, 0, p.in_h - 1) * p.in_w;
    float r = 0.0;
    for (int kx = 0; kx < 4; ++kx) r += wx[kx] * T(x[row + clamp(fx - 1 + kx, 0, p.in_w - 1)]);
    acc += wy[ky] * r;
  }
  y[i] = ELEM(acc);
#else
  cy = clamp(cy, 0.0, float(p.in_h - 1));
  cx = clamp(cx, 0.0, float(p.in_w - 1));
  int y0 = int(cy), x0 = int(cx);
  int y1 = min(y0 + 1, p.in_h - 1), x1 = min(x0 + 1, p.in_w - 1);
  float ty = cy - float(y0), tx = cx - float(x0);
  float top = mix(T(x[plane + y0 * p.in_w + x0]), T(x[plane + y0 * p.in_w + x1]), tx);
  float bottom = mix(T(x[plane + y1 * p.in_w + x0]), T(x[plane + y1 * p.in_w + x1]), tx);
  y[i] = ELEM(mix(top, bottom, ty));
#endif
}
