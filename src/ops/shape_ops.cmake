# Data-movement shaders are generated per element size (see shape_ops.glsl), not per dtype.
foreach(bits 8 16 32 64)
  vkgraph_shader(strided_copy_${bits} ${CMAKE_CURRENT_LIST_DIR}/shape_ops.comp ELEM_BITS=${bits})
endforeach()
