foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_shader(grid_sample_${dtype} ${CMAKE_CURRENT_LIST_DIR}/grid_sample.comp DTYPE_${DTYPE}=1)
endforeach()
