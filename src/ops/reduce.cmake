# Reductions: one source, one variant per op and dtype through defines; the `op` axis is
# ops::ReduceOp.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader_family(reduce
  AXIS op ENUM sum mean max min prod l2 log_sum_exp sum_square l1
  AXIS dtype DTYPE)
foreach(op sum mean max min prod l1 l2 log_sum_exp sum_square)
  string(TOUPPER ${op} OP)
  foreach(dtype f32 f16)
    string(TOUPPER ${dtype} DT)
    vkgraph_variant(reduce reduce_${op}_${dtype} ${OPS}/reduce.comp KEY ${op} ${dtype}
                    DEFINES OP_${OP}=1 DTYPE_${DT}=1)
  endforeach()
endforeach()
foreach(op sum max min prod)
  string(TOUPPER ${op} OP)
  foreach(dtype i32 i64)
    string(TOUPPER ${dtype} DT)
    vkgraph_variant(reduce reduce_${op}_${dtype} ${OPS}/reduce.comp KEY ${op} ${dtype}
                    DEFINES OP_${OP}=1 DTYPE_${DT}=1)
  endforeach()
endforeach()
vkgraph_shader_family(argmax AXIS dtype DTYPE)
foreach(dtype f32 f16 i32 i64)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_variant(argmax argmax_${dtype} ${OPS}/argmax.comp KEY ${dtype}
                  DEFINES DTYPE_${DTYPE}=1)
endforeach()
