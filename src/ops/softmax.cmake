foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_shader(softmax_${dtype} ${CMAKE_CURRENT_LIST_DIR}/softmax.comp LOG=0 DTYPE_${DTYPE}=1)
  vkgraph_shader(log_softmax_${dtype} ${CMAKE_CURRENT_LIST_DIR}/softmax.comp LOG=1
                 DTYPE_${DTYPE}=1)
endforeach()
