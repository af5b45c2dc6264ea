// The im2col view of X that the implicit-GEMM convolution (conv.comp) loads its B tiles from:
// column n is an output pixel of one image, row k an input channel of the group and a kernel
// tap. A thread always loads one column, so im2col_column() decodes its
// pixel once for the whole K walk and the row cursor below only the taps. POINTWISE
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

// A walk down the thread's column, rows k, k + step, ...: im2col_seek(k) decodes row k's
// channel and taps (the divisions), im2col_next(step) moves on with compares only, and
// im2col_here() loads the current row (0 in the padding); the caller checks n_valid and k < K.
// A K slice costs one seek, not a division pair per element. im2col(k) is a seek and a load.
#if POINTWISE
int cur_k;
void im2col_seek(int k) { cur_k = k; }
void im2col_next(int step) { cur_k += step; }
float im2col_here() { return T(x[x_col + cur_k * in_vol]); }
#else
int cur_ci, cur_kh, cur_kw;
#if CONV3D
int cur_kd;
#endif
void im2col_seek(int k) {
  cur_ci = k / taps;
  int tap = k - cur_ci * taps;
#if CONV3D
  cur_kd = tap / k_hw;
  tap -= cur_kd * k_hw;
#endif
  cur_kh = tap / p.k_w;
  cur_kw = tap - cur_kh * p.k_w;
}
void im2col_next(int step) {
  cur_kw += step;
  while (cur_kw >= p.k_w) {  // step may exceed k_w (e.g. 1x1 strided windows)
    cur_kw -= p.k_w;
    if (++cur_kh == p.k_h) {
      cur_kh = 0;
#if CONV3D
      if (++cur_kd == p.k_d) {
        cur_kd = 0;
        ++cur_ci;
      }
#else
      ++cur_ci;
#endif
    }
  }
}
float im2col_here() {
#if CONV3D
  int id = id0 + cur_kd * p.dil_d;
  bool depth_in = uint(id) < uint(p.in_d);
  int plane = cur_ci * p.in_d + id;
#else
  const bool depth_in = true;
  int plane = cur_ci;
#endif
  int ih = ih0 + cur_kh * p.dil_h;
  int iw = iw0 + cur_kw * p.dil_w;
  if (depth_in && uint(ih) < uint(p.in_h) && uint(iw) < uint(p.in_w))
    return T(x[x_base + (plane * p.in_h + ih) * p.in_w + iw]);
  return 0.0;
}
#endif

float im2col(int k) {
  im2col_seek(k);
  return im2col_here();
}
