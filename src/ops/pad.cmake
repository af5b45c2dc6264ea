vkgraph_shader_family(pad AXIS bits UINT)
foreach(bits 8 16 32 64)
  vkgraph_variant(pad pad_${bits} ${CMAKE_CURRENT_LIST_DIR}/pad.comp KEY ${bits}
                  DEFINES ELEM_BITS=${bits})
endforeach()
