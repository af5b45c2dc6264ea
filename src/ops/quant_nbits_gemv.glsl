// What MatMulNBits' decode GEMVs (quant_nbits_gemv.comp, quant_nbits_gemv_wide.comp,
// quant_nbits_gemv_dot.comp) share: the bindings after a's (binding 0, declared by each kernel
// in the widths it loads), the push constants quant_nbits.cpp's gemv_push builds, and the zero
// point of a block. The including shader declares BITS (a constant or spec constant) first.
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 1) readonly buffer B4 { uvec4 b4[]; };
layout(std430, binding = 2) readonly buffer Scales { ELEM scales[]; };
layout(std430, binding = 3) readonly buffer ZeroPacked { uint8_t zero_packed[]; };
layout(std430, binding = 4) readonly buffer ZeroFloat { ELEM zero_float[]; };
layout(std430, binding = 5) readonly buffer Bias { ELEM bias[]; };
layout(std430, binding = 6) writeonly buffer Y { ELEM y[]; };

layout(push_constant) uniform Params {
  int N, K;
  int block_size, blocks;  // blocks per row
  int row_stride;          // 32-bit words per row of b in memory
  int words;               // words of a row that hold codes with k < K
  int zero_row_bytes;      // packed zero points: bytes per row
  int zero_mode;           // 0: 2^(BITS-1), 1: packed uint8, 2: float
  int has_bias;
} p;

// The zero point of row n's block: 2^(BITS-1), a packed BITS-bit code, or a float.
float zero_of(int n, int block) {
  if (p.zero_mode == 0) return float(1 << (BITS - 1));
  if (p.zero_mode == 2) return float(zero_float[n * p.blocks + block]);
  const int bit = block * BITS;
  const uint byte = uint(zero_packed[n * p.zero_row_bytes + bit / 8]);
  return float((byte >> uint(bit % 8)) & ((1u << BITS) - 1u));
}
