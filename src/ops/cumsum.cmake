vkgraph_shader_family(cumsum AXIS dtype DTYPE)
foreach(dtype f32 i32 i64)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_variant(cumsum cumsum_${dtype} ${CMAKE_CURRENT_LIST_DIR}/cumsum.comp KEY ${dtype}
                  DEFINES DTYPE_${DTYPE}=1)
endforeach()
