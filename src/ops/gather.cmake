# Index tensors sit at binding INDEX_BINDING (see shape_ops.glsl). Pure moves are per element
# size; scatter reductions do arithmetic, so they are per dtype.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(bits 8 16 32 64)
  vkgraph_shader(gather_${bits} ${OPS}/gather.comp ELEM_BITS=${bits} INDEX_BINDING=1)
  vkgraph_shader(gather_elements_${bits} ${OPS}/gather_elements.comp ELEM_BITS=${bits}
                 INDEX_BINDING=1)
  vkgraph_shader(scatter_elements_none_${bits} ${OPS}/scatter_elements.comp ELEM_BITS=${bits}
                 INDEX_BINDING=0 REDUCE_NONE=1)
endforeach()
foreach(reduce add mul max min)
  string(TOUPPER ${reduce} REDUCE)
  foreach(dtype f32 i32 i64)
    string(TOUPPER ${dtype} DTYPE)
    vkgraph_shader(scatter_elements_${reduce}_${dtype} ${OPS}/scatter_elements.comp
                   DTYPE_${DTYPE}=1 INDEX_BINDING=0 REDUCE_${REDUCE}=1)
  endforeach()
endforeach()
