foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_shader(attention_${dtype} ${CMAKE_CURRENT_LIST_DIR}/attention.comp MASK=0
                 DTYPE_${DTYPE}=1)
  vkgraph_shader(attention_mask_${dtype} ${CMAKE_CURRENT_LIST_DIR}/attention.comp MASK=1
                 DTYPE_${DTYPE}=1)
endforeach()
