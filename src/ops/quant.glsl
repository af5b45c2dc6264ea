// Helpers of the quantization shaders. Quantized tensors of either signedness are bound as
// uint8_t arrays (8-bit storage only, no shaderInt8): a load widens the byte to int and
// sign-extends it when the tensor is Int8; a store keeps the low 8 bits of the saturated int.
#extension GL_EXT_shader_8bit_storage : require

int widen(uint b, int is_signed) {
  int v = int(b);
  return is_signed != 0 ? (v ^ 0x80) - 0x80 : v;
}

// Functions cannot take or return 8-bit values without shaderInt8, hence the macros.
#define widen_byte(b, is_signed) widen(uint(b), is_signed)
#define narrow_byte(v) uint8_t(uint(v) & 0xffu)

// a / b, corrected by one step on the exact residual so that a quotient that is exactly
// representable comes out exactly: GLSL allows a / b 2.5 ulp of error (lavapipe's is not
// correctly rounded), which would move ties such as 2.5 off the tie. The residual a - q * b
// is computed exactly with Dekker's product (products and sums are correctly rounded, and
// `precise` forbids contracting them; fma is not relied on: it need not be fused). Other
// quotients end within an ulp, nearly always the correctly rounded value.
vec2 split_halves(float x) {
  precise float t = 4097.0 * x;
  precise float hi = t - (t - x);
  precise float lo = x - hi;
  return vec2(hi, lo);
}

float div_exact(float a, float b) {
  precise float q = a / b;
  precise float p = q * b;
  vec2 qs = split_halves(q), bs = split_halves(b);
  precise float err = ((qs.x * bs.x - p) + qs.x * bs.y + qs.y * bs.x) + qs.y * bs.y;
  precise float r = (a - p) - err;  // a - p is exact: p is within a few ulp of a
  precise float c = q + r / b;
  return isnan(c) || isinf(c) ? q : c;
}

// ONNX QuantizeLinear's rounding and saturation: round half to even, then clamp to the
// quantized type's [qmin, qmax]. `zero` is added after rounding, in float (exact for the
// 8-bit range). NaN maps to the zero point.
int quantize_value(float v, int zero, int qmin, int qmax) {
  if (isnan(v)) return clamp(zero, qmin, qmax);
  float q = clamp(roundEven(v) + float(zero), float(qmin), float(qmax));
  return int(q);
}

// x * y + z with one rounding, whatever the driver makes of fma() (lavapipe computes it as a
// multiply and an add, even `precise`): Dekker's exact product error and an exact two-sum,
// added last. Correctly rounded but for double-rounding cases far rarer than any tie here.
float fma_exact(float x, float y, float z) {
  precise float p = x * y;
  vec2 xs = split_halves(x), ys = split_halves(y);
  precise float e = ((xs.x * ys.x - p) + xs.x * ys.y + xs.y * ys.x) + xs.y * ys.y;
  precise float s = z + p;
  precise float b = s - z;
  precise float t = (z - (s - b)) + (p - b);  // z + p = s + t exactly
  precise float r = s + (t + e);
  return r;
}

// A QDQ Add, DequantizeLinear(a) + DequantizeLinear(b) -> QuantizeLinear(y), on the raw 8-bit
// values a (the Add's first input) and b, as onnxruntime's QLinearAdd computes it (the kernel
// its graph optimiser makes of that pattern, so quantized models match its CPU result bit for
// bit): the scale ratios ra = sa / sy and rb = sb / sy, a folded constant
// zy - fma(ra, za, rb zb), then fma(a, ra, fma(b, rb, constant)) rounded half to even into
// [qmin, qmax]. ONNX's separate ops compute the same real sum with other roundings: the two can
// differ by one step where the sum lies within a few ulp of a tie.
int qlinear_add_value(int a, int b, float sa, int za, float sb, int zb, float sy, int zy,
                      int qmin, int qmax) {
  const float ra = div_exact(sa, sy), rb = div_exact(sb, sy);
  precise float zb_part = rb * float(zb);
  precise float folded = float(zy) - fma_exact(ra, float(za), zb_part);
  return quantize_value(fma_exact(float(a), ra, fma_exact(float(b), rb, folded)), 0, qmin, qmax);
}

// A QDQ Mul, DequantizeLinear(a) * DequantizeLinear(b) -> QuantizeLinear(y), as onnxruntime's
// QLinearMul computes it: the exact integer product (a - za)(b - zb) (within 2^24, so exact in
// float32 too), times the ratio sa sb / sy, plus zy, each step rounded to float32 (no fma), then
// rounded half to even into [qmin, qmax].
int qlinear_mul_value(int a, int b, float sa, int za, float sb, int zb, float sy, int zy,
                      int qmin, int qmax) {
  precise float sab = sa * sb;
  const float ratio = div_exact(sab, sy);
  precise float scaled = float((a - za) * (b - zb)) * ratio;
  precise float v = scaled + float(zy);
  return quantize_value(v, 0, qmin, qmax);
}

// DynamicQuantizeLinear's parameters from x's range [min, max] (which includes 0): scale =
// (max - min) / 255, zero = saturate(round_half_even(-min / scale)) in [0, 255]; an all-zero x
// gives scale 0 and zero 0 (ONNX leaves 0 / 0 undefined). quant_dynamic.comp's parameter pass
// and the packed GEMM's dynamic variant (quant_packed.comp) both compute them here.
void dynamic_params(vec2 range, out float scale, out int zero) {
  scale = div_exact(range.y - range.x, 255.0);
  zero = scale == 0.0 ? 0 : quantize_value(div_exact(0.0 - range.x, scale), 0, 0, 255);
}
