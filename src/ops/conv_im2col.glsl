// The im2col view of X that the implicit-GEMM convolutions (conv.comp, conv_coopmat.comp) load
// their B tiles from: column n is an output pixel of one image, row k an input channel of the
// group and a kernel tap. A thread always loads one column, so im2col_column() decodes its
// pixel once for the whole K walk and im2col() then needs only the tap arithmetic. POINTWISE
// (1x1, stride 1, no padding) reads X as a plain [K, N] matrix per image; CONV3D decodes a
// depth tap too. Needs conv_common.glsl's X and push constants.
int taps, in_vol, x_base;
bool n_valid;
#if POINTWISE
int x_col;
#else
int ih0, iw0;
#if CONV3D
int id0, k_hw;
#endif
#endif

// Column n of the group's im2col matrix, whose N is batch * output pixels.
void im2col_column(int n, int group) {
  taps = p.k_d * p.k_h * p.k_w;
  in_vol = p.in_d * p.in_h * p.in_w;
  const int out_hw = p.out_h * p.out_w;
  const int out_vol = p.out_d * out_hw;
  n_valid = n < p.batch * out_vol;
  const int img = n_valid ? n / out_vol : 0;
  const int pix = n - img * out_vol;
  x_base = (img * p.in_c + group * p.in_c_g) * in_vol;
#if POINTWISE
  x_col = x_base + pix;
#else
#if CONV3D
  const int od = pix / out_hw;
  const int pix_hw = pix - od * out_hw;
  id0 = od * p.stride_d - p.pad_f;
  k_hw = p.k_h * p.k_w;
#else
  const int pix_hw = pix;
#endif
  const int oh = pix_hw / p.out_w;
  ih0 = oh * p.stride_h - p.pad_t;
  iw0 = (pix_hw - oh * p.out_w) * p.stride_w - p.pad_l;
#endif
}

// Row k of the thread's column (0 in the padding); the caller checks n_valid and k < K.
float im2col(int k) {
#if POINTWISE
  return T(x[x_col + k * in_vol]);
#else
  int ci = k / taps;
  int tap = k - ci * taps;
#if CONV3D
  int kd = tap / k_hw;
  tap -= kd * k_hw;
  int id = id0 + kd * p.dil_d;
  bool depth_in = uint(id) < uint(p.in_d);
  int plane = ci * p.in_d + id;
#else
  const bool depth_in = true;
  int plane = ci;
#endif
  int kh = tap / p.k_w;
  int ih = ih0 + kh * p.dil_h;
  int iw = iw0 + (tap - kh * p.k_w) * p.dil_w;
  if (depth_in && uint(ih) < uint(p.in_h) && uint(iw) < uint(p.in_w))
    return T(x[x_base + (plane * p.in_h + ih) * p.in_w + iw]);
  return 0.0;
#endif
}
