foreach(bits 8 16 32 64)
  vkgraph_shader(where_${bits} ${CMAKE_CURRENT_LIST_DIR}/where.comp ELEM_BITS=${bits})
endforeach()
