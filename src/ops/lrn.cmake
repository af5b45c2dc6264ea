foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_shader(lrn_${dtype} ${CMAKE_CURRENT_LIST_DIR}/lrn.comp DTYPE_${DTYPE}=1)
endforeach()
