#version 450
// RoiAlign: one invocation per output element [roi, c, ph, pw] averages (or takes the max of)
// grid_h x grid_w bilinear samples of its bin, as ONNX (and onnxruntime) define it. Samples
// more than one pixel outside the image count as zero.
#include "common.glsl"
#define INDEX_BINDING 2
#define ELEM_BITS 32
#include "shape_ops.glsl"

layout(constant_id = 4) const bool MODE_MAX = false;
layout(constant_id = 5) const bool HALF_PIXEL = true;  // else output_half_pixel (legacy)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Rois { float rois[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  int n;
  int batch;
  int channels;
  int in_h;
  int in_w;
  int out_h;
  int out_w;
  int sampling_ratio;  // 0: adaptive, ceil(roi size / output size)
  float spatial_scale;
} p;

// The four weighted corner values of a bilinear sample at (sy, sx).
vec4 corners(int plane, float sy, float sx) {
  if (sy < -1.0 || sy > float(p.in_h) || sx < -1.0 || sx > float(p.in_w)) return vec4(0.0);
  sy = max(sy, 0.0);
  sx = max(sx, 0.0);
  int y0 = int(sy), x0 = int(sx), y1, x1;
  if (y0 >= p.in_h - 1) {
    y0 = y1 = p.in_h - 1;
    sy = float(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= p.in_w - 1) {
    x0 = x1 = p.in_w - 1;
    sx = float(x0);
  } else {
    x1 = x0 + 1;
  }
  float ly = sy - float(y0), lx = sx - float(x0), hy = 1.0 - ly, hx = 1.0 - lx;
  return vec4(hy * hx * x[plane + y0 * p.in_w + x0], hy * lx * x[plane + y0 * p.in_w + x1],
              ly * hx * x[plane + y1 * p.in_w + x0], ly * lx * x[plane + y1 * p.in_w + x1]);
}

void main() {
  int i = int(linear_index());
  if (i >= p.n) return;
  int pw = i % p.out_w;
  int ph = (i / p.out_w) % p.out_h;
  int c = (i / (p.out_w * p.out_h)) % p.channels;
  int r = i / (p.out_w * p.out_h * p.channels);
  // Batch indices are not counted from the end: load_index's normalisation does not apply.
  int b = WIDE_INDICES ? (index_words[2 * r + 1] == 0 ? index_words[2 * r] : -1) : index_words[r];
  if (b < 0 || b >= p.batch) {  // a computed batch index out of range: nothing to sample
    y[i] = 0.0;
    return;
  }
  float offset = HALF_PIXEL ? 0.5 : 0.0;
  float x1 = rois[4 * r] * p.spatial_scale - offset, y1 = rois[4 * r + 1] * p.spatial_scale - offset;
  float x2 = rois[4 * r + 2] * p.spatial_scale - offset, y2 = rois[4 * r + 3] * p.spatial_scale - offset;
  float roi_w = x2 - x1, roi_h = y2 - y1;
  if (!HALF_PIXEL) {
    roi_w = max(roi_w, 1.0);
    roi_h = max(roi_h, 1.0);
  }
  float bin_h = roi_h / float(p.out_h), bin_w = roi_w / float(p.out_w);
  int grid_h = p.sampling_ratio > 0 ? p.sampling_ratio : int(ceil(roi_h / float(p.out_h)));
  int grid_w = p.sampling_ratio > 0 ? p.sampling_ratio : int(ceil(roi_w / float(p.out_w)));
  int plane = (b * p.channels + c) * p.in_h * p.in_w;
  float acc = MODE_MAX ? -3.402823466e38 : 0.0;
  bool any = false;
  for (int iy = 0; iy < grid_h; ++iy) {
    float sy = y1 + float(ph) * bin_h + (float(iy) + 0.5) * bin_h / float(grid_h);
    for (int ix = 0; ix < grid_w; ++ix) {
      float sx = x1 + float(pw) * bin_w + (float(ix) + 0.5) * bin_w / float(grid_w);
      vec4 v = corners(plane, sy, sx);
      // Max mode takes the largest weighted corner, as the reference implementations do.
      acc = MODE_MAX ? max(acc, max(max(v.x, v.y), max(v.z, v.w))) : acc + v.x + v.y + v.z + v.w;
      any = true;
    }
  }
  y[i] = MODE_MAX ? (any ? acc : 0.0) : acc / float(max(grid_h * grid_w, 1));
}
