foreach(bits 8 16 32 64)
  vkgraph_shader(reverse_sequence_${bits} ${CMAKE_CURRENT_LIST_DIR}/reverse_sequence.comp
                 ELEM_BITS=${bits} INDEX_BINDING=1)
endforeach()
