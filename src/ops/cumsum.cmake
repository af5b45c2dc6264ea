foreach(dtype f32 i32 i64)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_shader(cumsum_${dtype} ${CMAKE_CURRENT_LIST_DIR}/cumsum.comp DTYPE_${DTYPE}=1)
endforeach()
