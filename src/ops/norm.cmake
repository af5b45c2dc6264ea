# Normalization shaders: one row-normalization kernel (layer, instance and group norm), the
# subgroup-per-row kernel for short contiguous rows (layer and RMS norm) and the elementwise
# inference batch norm, for float32 and float16 tensors. `range`: both row kernels also write
# each row's DynamicQuantizeLinear range partial (ops::layer_norm_with_range).
vkgraph_shader_family(norm
  AXIS kind ENUM rows subgroup_rows batch
  AXIS dtype DTYPE
  AXIS range BOOL)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_variant(norm norm_rows_${dtype} ${CMAKE_CURRENT_LIST_DIR}/norm.comp KEY rows ${dtype} 0
                  DEFINES DTYPE_${DT}=1)
  if(dtype STREQUAL f32)  # ops::layer_norm_with_range: float32 only (norm.cpp says why)
    vkgraph_variant(norm norm_rows_range_${dtype} ${CMAKE_CURRENT_LIST_DIR}/norm.comp
                    KEY rows ${dtype} 1 DEFINES DTYPE_${DT}=1 RANGE=1)
    vkgraph_variant(norm norm_subgroup_rows_range_${dtype}
                    ${CMAKE_CURRENT_LIST_DIR}/norm_subgroup.comp
                    KEY subgroup_rows ${dtype} 1 DEFINES DTYPE_${DT}=1 RANGE=1)
  endif()
  vkgraph_variant(norm norm_subgroup_rows_${dtype} ${CMAKE_CURRENT_LIST_DIR}/norm_subgroup.comp
                  KEY subgroup_rows ${dtype} 0 DEFINES DTYPE_${DT}=1)
  vkgraph_variant(norm batch_norm_${dtype} ${CMAKE_CURRENT_LIST_DIR}/norm_batch.comp
                  KEY batch ${dtype} 0 DEFINES DTYPE_${DT}=1)
endforeach()
