# Index tensors sit at binding INDEX_BINDING (see shape_ops.glsl). Pure moves are per element
# size; scatter reductions do arithmetic, so they are per dtype (the `reduce` axis is
# ops::ScatterReduction without None, which is the move scatter_elements_none).
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader_family(gather
  AXIS kind ENUM gather gather_elements scatter_elements_none
  AXIS bits UINT)
foreach(bits 8 16 32 64)
  vkgraph_variant(gather gather_${bits} ${OPS}/gather.comp KEY gather ${bits}
                  DEFINES ELEM_BITS=${bits} INDEX_BINDING=1)
  vkgraph_variant(gather gather_elements_${bits} ${OPS}/gather_elements.comp
                  KEY gather_elements ${bits} DEFINES ELEM_BITS=${bits} INDEX_BINDING=1)
  vkgraph_variant(gather scatter_elements_none_${bits} ${OPS}/scatter_elements.comp
                  KEY scatter_elements_none ${bits}
                  DEFINES ELEM_BITS=${bits} INDEX_BINDING=0 REDUCE_NONE=1)
endforeach()
vkgraph_shader_family(scatter
  AXIS reduce ENUM add mul max min
  AXIS dtype DTYPE)
foreach(reduce add mul max min)
  string(TOUPPER ${reduce} REDUCE)
  foreach(dtype f32 i32 i64)
    string(TOUPPER ${dtype} DTYPE)
    vkgraph_variant(scatter scatter_elements_${reduce}_${dtype} ${OPS}/scatter_elements.comp
                    KEY ${reduce} ${dtype}
                    DEFINES DTYPE_${DTYPE}=1 INDEX_BINDING=0 REDUCE_${REDUCE}=1)
  endforeach()
endforeach()
