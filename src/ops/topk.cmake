vkgraph_shader_family(topk AXIS dtype DTYPE)
foreach(dtype f32 i32 i64)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_variant(topk topk_${dtype} ${CMAKE_CURRENT_LIST_DIR}/topk.comp KEY ${dtype}
                  DEFINES DTYPE_${DTYPE}=1)
endforeach()
