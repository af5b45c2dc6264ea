// Shared by every compute shader: workgroup size from specialization constants 0..2, the
// element type T chosen by a DTYPE_* define, and a linear invocation index for 2D grids.
#if defined(DTYPE_I64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T int64_t
#elif defined(DTYPE_I32)
#define T int
#else
#define T float
#define DTYPE_F32 1
#endif

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

uint linear_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

#define MAX_RANK 6
