foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_shader(attention_${dtype} ${CMAKE_CURRENT_LIST_DIR}/attention.comp MASK=0
                 DTYPE_${DTYPE}=1)
  vkgraph_shader(attention_mask_${dtype} ${CMAKE_CURRENT_LIST_DIR}/attention.comp MASK=1
                 DTYPE_${DTYPE}=1)
endforeach()
# Tensor cores (GL_NV_cooperative_matrix) for float16 storage, head dims 64 and 128.
foreach(dh 64 128)
  vkgraph_shader(attention_coopmat_d${dh}_f16 ${CMAKE_CURRENT_LIST_DIR}/attention_coopmat.comp
                 DH=${dh} MASK=0 DTYPE_F16=1)
  vkgraph_shader(attention_coopmat_mask_d${dh}_f16
                 ${CMAKE_CURRENT_LIST_DIR}/attention_coopmat.comp DH=${dh} MASK=1 DTYPE_F16=1)
endforeach()
