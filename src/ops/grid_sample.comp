#version 450
// GridSample as ONNX (and PyTorch's grid_sample) define it for NCHW input: grid [N, Ho, Wo, 2]
// holds (x, y) in [-1, 1]; each output element samples its channel there. One invocation per
// output element.
#include "common.glsl"

// 0 bilinear, 1 nearest, 2 bicubic
layout(constant_id = 3) const int MODE = 0;
// 0 zeros, 1 border, 2 reflection
layout(constant_id = 4) const int PADDING = 0;
layout(constant_id = 5) const bool ALIGN_CORNERS = false;
layout(std430, binding = 0) readonly buffer X { ELEM x[]; };
layout(std430, binding = 1) readonly buffer Grid { ELEM grid[]; };
layout(std430, binding = 2) writeonly buffer Y { ELEM y[]; };
layout(push_constant) uniform Params {
  int n;
  int channels;
  int in_h;
  int in_w;
  int out_h;
  int out_w;
} p;

float unnormalize(float g, int size) {
  return ALIGN_CORNERS ? (g + 1.0) * 0.5 * float(size - 1) : ((g + 1.0) * float(size) - 1.0) * 0.5;
}

// Reflects c into [low / 2, high / 2] (bounds given doubled so that -0.5 is exact).
float reflect_coord(float c, float twice_low, float twice_high) {
  if (twice_low == twice_high) return 0.0;
  float lo = twice_low * 0.5, span = (twice_high - twice_low) * 0.5;
  c = abs(c - lo);
  float flips = floor(c / span);
  float extra = c - flips * span;
  return mod(flips, 2.0) == 0.0 ? extra + lo : span - extra + lo;
}

// The padding mode's coordinate rule: border clamps, reflection folds back into the image.
float pad_coord(float c, int size) {
  if (PADDING == 1) return clamp(c, 0.0, float(size - 1));
  if (PADDING == 2) {
    c = ALIGN_CORNERS ? reflect_coord(c, 0.0, 2.0 * float(size - 1))
                      : reflect_coord(c, -1.0, 2.0 * float(size) - 1.0);
    return clamp(c, 0.0, float(size - 1));
  }
  return c;
}

float pixel(int plane, int yy, int xx) {
  if (yy < 0 || yy >= p.in_h || xx < 0 || xx >= p.in_w) return 0.0;
  return float(x[plane + yy * p.in_w + xx]);
}

// Bicubic taps read through the padding rule one by one, as PyTorch's does.
float padded_pixel(int plane, int yy, int xx) {
  if (PADDING == 0) return pixel(plane, yy, xx);
  return pixel(plane, int(pad_coord(float(yy), p.in_h)), int(pad_coord(float(xx), p.in_w)));
}

vec4 cubic_weights(float t) {
  const float a = -0.75;
  vec4 d = vec4(t + 1.0, t, 1.0 - t, 2.0 - t);
  vec4 w;
  for (int k = 0; k < 4; ++k) {
    float v = d[k];
    w[k] = v <= 1.0 ? ((a + 2.0) * v - (a + 3.0)) * v * v + 1.0
                    : ((a * v - 5.0 * a) * v + 8.0 * a) * v - 4.0 * a;
  }
  return w;
}

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int ox = i % p.out_w;
  int oy = (i / p.out_w) % p.out_h;
  int c = (i / (p.out_w * p.out_h)) % p.channels;
  int b = i / (p.out_w * p.out_h * p.channels);
  int g = ((b * p.out_h + oy) * p.out_w + ox) * 2;
  float sx = unnormalize(float(grid[g]), p.in_w);
  float sy = unnormalize(float(grid[g + 1]), p.in_h);
  int plane = (b * p.channels + c) * p.in_h * p.in_w;
  if (isnan(sx) || isnan(sy)) {  // nowhere: like a point outside the image
    y[i] = ELEM(0.0);
    return;
  }
  float v;
  if (MODE == 2) {
    float fx = floor(sx), fy = floor(sy);
    vec4 wx = cubic_weights(sx - fx), wy = cubic_weights(sy - fy);
    v = 0.0;
    for (int ky = 0; ky < 4; ++ky) {
      float row = 0.0;
      for (int kx = 0; kx < 4; ++kx)
        row += wx[kx] * padded_pixel(plane, int(fy) - 1 + ky, int(fx) - 1 + kx);
      v += wy[ky] * row;
    }
  } else {
    sx = pad_coord(sx, p.in_w);
    sy = pad_coord(sy, p.in_h);
    if (MODE == 1) {
      v = pixel(plane, int(roundEven(sy)), int(roundEven(sx)));
    } else {
      float fx = floor(sx), fy = floor(sy);
      float tx = sx - fx, ty = sy - fy;
      int x0 = int(fx), y0 = int(fy);
      v = (1.0 - ty) * ((1.0 - tx) * pixel(plane, y0, x0) + tx * pixel(plane, y0, x0 + 1)) +
          ty * ((1.0 - tx) * pixel(plane, y0 + 1, x0) + tx * pixel(plane, y0 + 1, x0 + 1));
    }
  }
  y[i] = ELEM(v);
}
