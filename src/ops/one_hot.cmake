foreach(bits 8 16 32 64)
  vkgraph_shader(one_hot_${bits} ${CMAKE_CURRENT_LIST_DIR}/one_hot.comp ELEM_BITS=${bits}
                 INDEX_BINDING=0)
endforeach()
