foreach(bits 8 32 64)
  vkgraph_shader(resize_nearest_${bits} ${CMAKE_CURRENT_LIST_DIR}/resize.comp MODE_NEAREST=1
                 ELEM_BITS=${bits})
endforeach()
vkgraph_shader(resize_linear_f32 ${CMAKE_CURRENT_LIST_DIR}/resize.comp DTYPE_F32=1)
