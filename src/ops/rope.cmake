# Rotary position embedding (rope.cpp), for float32 and float16 tensors.
vkgraph_shader_family(rope AXIS dtype DTYPE)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_variant(rope rope_${dtype} ${CMAKE_CURRENT_LIST_DIR}/rope.comp KEY ${dtype}
                  DEFINES DTYPE_${DT}=1)
endforeach()
