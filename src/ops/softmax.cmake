vkgraph_shader_family(softmax AXIS log BOOL AXIS dtype DTYPE)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_variant(softmax softmax_${dtype} ${CMAKE_CURRENT_LIST_DIR}/softmax.comp KEY 0 ${dtype}
                  DEFINES LOG=0 DTYPE_${DTYPE}=1)
  vkgraph_variant(softmax log_softmax_${dtype} ${CMAKE_CURRENT_LIST_DIR}/softmax.comp
                  KEY 1 ${dtype} DEFINES LOG=1 DTYPE_${DTYPE}=1)
endforeach()
