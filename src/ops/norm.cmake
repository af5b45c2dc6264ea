# Normalization shaders: one row-normalization kernel (layer, instance and group norm) and the
# elementwise inference batch norm.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader(norm_rows_f32 ${OPS}/norm.comp)
vkgraph_shader(batch_norm_f32 ${OPS}/norm_batch.comp)
