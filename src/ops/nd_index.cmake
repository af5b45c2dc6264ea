# GatherND and ScatterND without reduction move elements (per element size); the scatter
# reductions do arithmetic (per dtype). Index tensors sit at INDEX_BINDING (shape_ops.glsl).
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(bits 8 16 32 64)
  vkgraph_shader(gather_nd_${bits} ${OPS}/nd_index.comp ELEM_BITS=${bits} INDEX_BINDING=1 GATHER=1)
  vkgraph_shader(scatter_nd_none_${bits} ${OPS}/nd_index.comp ELEM_BITS=${bits} INDEX_BINDING=0
                 SCATTER_NONE=1)
endforeach()
foreach(reduce add mul max min)
  string(TOUPPER ${reduce} REDUCE)
  foreach(dtype f32 i32 i64)
    string(TOUPPER ${dtype} DTYPE)
    vkgraph_shader(scatter_nd_${reduce}_${dtype} ${OPS}/nd_index.comp DTYPE_${DTYPE}=1
                   INDEX_BINDING=0 SCATTER_REDUCE=1 REDUCE_${REDUCE}=1)
  endforeach()
endforeach()
