// Shared by every compute shader: workgroup size from specialization constants 0..2, the
// element types chosen by a DTYPE_* define, and a linear invocation index for 2D grids.
//
// T is the type shaders compute in and ELEM (ELEM4 for four) the type their buffers hold. They
// differ only for DTYPE_F16: float16 storage (storageBuffer16BitAccess) with float32
// arithmetic, so no shaderFloat16 is needed and sums keep float32 precision; MATH_F16 makes T
// float16_t as well, for the few variants declared with it. Load with T(x[i]),
// store with ELEM(v). DTYPE_FLOAT marks float arithmetic, for f32 and f16 alike.
#if defined(DTYPE_I64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T int64_t
#define ELEM int64_t
#elif defined(DTYPE_I32)
#define T int
#define ELEM int
#define ELEM4 ivec4
#elif defined(DTYPE_F16) && defined(MATH_F16)
// float16 arithmetic too (shaderFloat16), for the kernels whose variants say so (binary.cmake's
// half_math): one rounding per operation, as float32 arithmetic rounded to float16 on store.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define T float16_t
#define ELEM float16_t
#define ELEM4 f16vec4
#define DTYPE_FLOAT 1
#elif defined(DTYPE_F16)
#extension GL_EXT_shader_16bit_storage : require
#define T float
#define ELEM float16_t
#define ELEM4 f16vec4
#define DTYPE_FLOAT 1
#else
#define T float
#define ELEM float
#define ELEM4 vec4
#define DTYPE_F32 1
#define DTYPE_FLOAT 1
#endif

// The GEMM kernels' (conv, matmul) first input and output hold ELEM, except around split-K:
// its partial pass (SPLIT_K) writes float32 partials and its reduce pass (SPLIT_K_REDUCE)
// reads them back, whatever the dtype.
#if SPLIT_K_REDUCE
#define GEMM_IN_ELEM float
#else
#define GEMM_IN_ELEM ELEM
#endif
#if SPLIT_K
#define GEMM_OUT_ELEM float
#else
#define GEMM_OUT_ELEM ELEM
#endif

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

uint linear_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

#define MAX_RANK 6

// NaN-propagating selections, as ONNX (NumPy) defines Max, Min, Relu, Clip and the max
// reductions. GLSL leaves max/min/clamp undefined for NaN operands (drivers keep either one),
// so every float selection goes through these. Finite and infinite operands take exactly the
// built-in's result; each costs one select beyond it.
float max_nan(float a, float b) { return (a > b || isnan(a)) ? a : b; }
float min_nan(float a, float b) { return (a < b || isnan(a)) ? a : b; }
float clamp_nan(float x, float lo, float hi) { return isnan(x) ? x : min(max(x, lo), hi); }
float nan_value() { return uintBitsToFloat(0x7fc00000u); }
// DynamicQuantizeLinear's (min, max) range with v counted. NaN elements do not count (ONNX
// leaves their quantization undefined): every range pass and LayerNormRange's partials take
// this one rule, so that fused and unfused paths agree.
vec2 range_with(vec2 r, float v) { return isnan(v) ? r : vec2(min(r.x, v), max(r.y, v)); }
#if defined(MATH_F16)
float16_t max_nan(float16_t a, float16_t b) { return (a > b || isnan(a)) ? a : b; }
float16_t min_nan(float16_t a, float16_t b) { return (a < b || isnan(a)) ? a : b; }
#endif
