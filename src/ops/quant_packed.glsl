// Shared by the packed integer GEMM (quant_packed.comp) and its split-K reduce
// (quant_packed_reduce.comp): the zero-point correction and the requantizing epilogue.
//
// The kernels sum raw products of the stored 8-bit values, four per 32-bit word. With weights
// w (zero point zw, per channel c) and data d (zero point zd), over the padded depth K4:
//   sum (d - zd)(w - zw) = sum d w - zd * sum w - zw * sum d + K4 * zd * zw
// The host packs the weights once at load and passes, per channel, sum w (padding k >= K
// holds zw, so it adds nothing) and zw (`chan` = {wsum, zw} pairs); sum d is summed next to
// the products only where some zw is not 0 (HAS_DSUM). Convolution padding reads zd, which
// adds nothing either.
#include "quant.glsl"

// The raw sum less zw * sum d: what a split-K slice stores, since it adds up across slices.
int corrected_partial(int raw, int dsum, ivec2 chan) {
  return raw - chan.y * dsum;
}

// The exact integer accumulation sum (d - zd)(w - zw) from the slice-summed partial.
int finish_sum(int partial, int zd, ivec2 chan, int k4) {
  return partial - zd * chan.x + k4 * zd * chan.y;
}

// saturate(round_half_even(acc * multiplier) + zy) as the byte to store.
int requantize(int acc, float multiplier, int zy, int qmin, int qmax) {
  return quantize_value(float(acc) * multiplier, zy, qmin, qmax);
}

// quantize_dynamic's epilogue: the unfused Cast, Mul(x_scale * w_scale) and Add(bias), in
// float32 rounded after each, as apart; `b` is -0 without a bias (v + -0 is v, for v = -0 too).
float dynamic_dequant(int sum, float x_scale, float w_scale, float b) {
  precise float scale = x_scale * w_scale;
  precise float v = float(sum) * scale;
  precise float r = v + b;
  return r;
}

#ifdef ACTIVATION_GLSL
// What follows the bias there: the residual Add (`r` -0 without one: exact), then the float
// matmul's epilogue activation (activation.glsl; the includer includes it first).
float dynamic_epilogue(float v, float r, int activation, float alpha, float beta) {
  precise float s = v + r;
  return activate(activation, s, alpha, beta);
}
#endif

// A QDQ residual Add fused after the requantization (quant_packed.cpp's ResidualRequant): the
// conv's quantized output q, read back through its DequantizeLinear (sc, zc), added to the
// other operand r (sr, zr) and quantized to (so, zo) by qlinear_add_value (quant.glsl), the
// function quant_add.comp runs on the two 8-bit tensors, with the operands in the Add's order,
// so the fused result is the unfused one exactly. `rp`: {sc, zc, sr, zr}, {so, zo, qmin, qmax},
// {r signed, q is the Add's second input}, scales as float bits.
int add_residual(int q, uint r_byte, ivec4 rp0, ivec4 rp1, ivec2 rp2) {
  const float sc = intBitsToFloat(rp0.x), sr = intBitsToFloat(rp0.z), so = intBitsToFloat(rp1.x);
  const int r = widen(r_byte, rp2.x);
  return rp2.y != 0
             ? qlinear_add_value(r, q, sr, rp0.w, sc, rp0.y, so, rp1.y, rp1.z, rp1.w)
             : qlinear_add_value(q, r, sc, rp0.y, sr, rp0.w, so, rp1.y, rp1.z, rp1.w);
}

// A QDQ unary op fused after the requantization (ops::ByteTable, HAS_TABLE): the stored byte b
// looked up in the table's 256 bytes, held four to a word after the residual's parameters in
// the epilogue constant (quant_packed.cpp's bind_epilogue), as ops::byte_table looks it up.
#define TABLE_BYTE(words, b) ((words[(b) >> 2] >> (8u * ((b) & 3u))) & 0xffu)
