# Nearest moves elements (per element size); linear interpolates (per float dtype).
vkgraph_shader_family(resize_nearest AXIS bits UINT)
foreach(bits 8 16 32 64)
  vkgraph_variant(resize_nearest resize_nearest_${bits} ${CMAKE_CURRENT_LIST_DIR}/resize.comp
                  KEY ${bits} DEFINES MODE_NEAREST=1 ELEM_BITS=${bits})
endforeach()
vkgraph_shader_family(resize_linear AXIS dtype DTYPE)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_variant(resize_linear resize_linear_${dtype} ${CMAKE_CURRENT_LIST_DIR}/resize.comp
                  KEY ${dtype} DEFINES DTYPE_${DT}=1)
  vkgraph_shader(resize_cubic_${dtype} ${CMAKE_CURRENT_LIST_DIR}/resize.comp DTYPE_${DT}=1
                 MODE_CUBIC=1)
endforeach()
