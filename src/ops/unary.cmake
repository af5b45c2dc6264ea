# Unary elementwise ops: one source, one variant per op and dtype through defines.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(op relu sigmoid tanh gelu gelu_tanh exp log neg sqrt abs reciprocal floor ceil round
        sign sin cos erf softplus mish leaky_relu elu selu clip hard_sigmoid hard_swish
        tan asin acos atan sinh cosh asinh acosh atanh softsign thresholded_relu celu)
  string(TOUPPER ${op} OP)
  vkgraph_shader(unary_${op}_f32 ${OPS}/unary.comp OP_${OP}=1 DTYPE_F32=1)
  vkgraph_shader(unary_${op}_f16 ${OPS}/unary.comp OP_${OP}=1 DTYPE_F16=1)
endforeach()
foreach(op neg abs sign)
  string(TOUPPER ${op} OP)
  vkgraph_shader(unary_${op}_i32 ${OPS}/unary.comp OP_${OP}=1 DTYPE_I32=1)
  vkgraph_shader(unary_${op}_i64 ${OPS}/unary.comp OP_${OP}=1 DTYPE_I64=1)
endforeach()
vkgraph_shader(unary_not_bool ${OPS}/unary.comp OP_NOT=1 DTYPE_BOOL=1)
