# Normalization shaders: one row-normalization kernel (layer, instance and group norm) and the
# elementwise inference batch norm, for float32 and float16 tensors.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_shader(norm_rows_${dtype} ${OPS}/norm.comp DTYPE_${DT}=1)
  vkgraph_shader(batch_norm_${dtype} ${OPS}/norm_batch.comp DTYPE_${DT}=1)
endforeach()
