// Shared by the data-movement shaders. Include after common.glsl.
//
// Shaders that only move elements are generated per element size (ELEM_BITS 8, 16, 32 or 64),
// not per dtype: f32 and i32 share one pipeline, and 64-bit moves need no shaderInt64. Bool
// tensors are one byte per element (storageBuffer8BitAccess), float16 two
// (storageBuffer16BitAccess). Elements are widened to VALUE in registers because any 8-bit
// arithmetic, even a select, would need the separate shaderInt8 feature.
#undef ELEM  // common.glsl's typed element; these shaders move raw bits
#undef ELEM4
#if ELEM_BITS == 8
#extension GL_EXT_shader_8bit_storage : require
#define ELEM uint8_t
#define VALUE uint
#define TO_VALUE(e) uint(e)
#define TO_ELEM(v) uint8_t(v)
#elif ELEM_BITS == 16
#extension GL_EXT_shader_16bit_storage : require
#define ELEM uint16_t
#define VALUE uint
#define TO_VALUE(e) uint(e)
#define TO_ELEM(v) uint16_t(v)
#elif ELEM_BITS == 64
#define ELEM uvec2
#define VALUE uvec2
#define TO_VALUE(e) (e)
#define TO_ELEM(v) (v)
#else
#define ELEM uint
#define VALUE uint
#define TO_VALUE(e) (e)
#define TO_ELEM(v) (v)
#endif

// VALUE from the two 32-bit words of a scalar sent through push constants (low word first).
VALUE value_from_words(uint lo, uint hi) {
#if ELEM_BITS == 64
  return uvec2(lo, hi);
#else
  return VALUE(lo);
#endif
}

#ifdef INDEX_BINDING
// Index tensors are int32 or int64; int64 is read as two words (little-endian), so no
// shaderInt64 is needed. Specialization constant 3 says which.
layout(constant_id = 3) const bool WIDE_INDICES = false;
layout(std430, binding = INDEX_BINDING) readonly buffer Indices { int index_words[]; };

// Element i of the index tensor, made non-negative for an axis of `dim`; -1 when out of range
// (ONNX leaves that undefined; the shaders then write zero or skip, never touch other memory).
int load_index(int i, int dim) {
  int v;
  if (WIDE_INDICES) {
    int lo = index_words[2 * i], hi = index_words[2 * i + 1];
    if (hi != (lo >> 31)) return -1;  // does not fit in int32: no tensor is that large
    v = lo;
  } else {
    v = index_words[i];
  }
  if (v < 0) v += dim;
  return v >= 0 && v < dim ? v : -1;
}
#endif
