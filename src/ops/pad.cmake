foreach(bits 8 16 32 64)
  vkgraph_shader(pad_${bits} ${CMAKE_CURRENT_LIST_DIR}/pad.comp ELEM_BITS=${bits})
endforeach()
