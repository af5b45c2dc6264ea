# Data-movement shaders are generated per element size (see shape_ops.glsl), not per dtype.
vkgraph_shader_family(strided_copy AXIS bits UINT)
foreach(bits 8 16 32 64)
  vkgraph_variant(strided_copy strided_copy_${bits} ${CMAKE_CURRENT_LIST_DIR}/shape_ops.comp
                  KEY ${bits} DEFINES ELEM_BITS=${bits})
endforeach()
