foreach(bits 8 16 32 64)
  vkgraph_shader(resize_nearest_${bits} ${CMAKE_CURRENT_LIST_DIR}/resize.comp MODE_NEAREST=1
                 ELEM_BITS=${bits})
endforeach()
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_shader(resize_linear_${dtype} ${CMAKE_CURRENT_LIST_DIR}/resize.comp DTYPE_${DT}=1)
  vkgraph_shader(resize_cubic_${dtype} ${CMAKE_CURRENT_LIST_DIR}/resize.comp DTYPE_${DT}=1
                 MODE_CUBIC=1)
endforeach()
