# Comparisons (the `op` axis is ops::CompareOp) and logical ops (ops::LogicalOp; logical_not
# is the same binary-shaped kernel with its second operand unused); results are Bool.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader_family(compare
  AXIS op ENUM equal less less_equal=LessOrEqual greater greater_equal=GreaterOrEqual
  AXIS dtype DTYPE)
foreach(op equal less less_equal greater greater_equal)
  string(TOUPPER ${op} OP)
  foreach(dtype f32 i32 i64 bool)
    string(TOUPPER ${dtype} DTYPE)
    vkgraph_variant(compare compare_${op}_${dtype} ${OPS}/compare.comp KEY ${op} ${dtype}
                    DEFINES OP_${OP}=1 DTYPE_${DTYPE}=1)
  endforeach()
endforeach()
vkgraph_shader_family(logical AXIS op ENUM and or xor)
foreach(op and or xor)
  string(TOUPPER ${op} OP)
  vkgraph_variant(logical logical_${op} ${OPS}/compare.comp KEY ${op} DEFINES OP_${OP}=1
                  LOGICAL=1)
endforeach()
vkgraph_shader(logical_not ${OPS}/compare.comp OP_NOT=1 LOGICAL=1)
