vkgraph_shader_family(where AXIS bits UINT)
foreach(bits 8 16 32 64)
  vkgraph_variant(where where_${bits} ${CMAKE_CURRENT_LIST_DIR}/where.comp KEY ${bits}
                  DEFINES ELEM_BITS=${bits})
endforeach()
