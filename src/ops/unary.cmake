# Unary elementwise ops: one source, one variant per op and dtype through defines. (silu,
# x * sigmoid(x), is no ONNX op: exporters write it as Sigmoid and Mul, which the fusion pass
# recognises for the epilogues; fuse_activation.h.) The `op`
# axis is ops::UnaryOp (add an op here, in unary.comp and in one lowering entry); `epilogue`
# lists the activations the matmul and conv epilogues fuse, in the order of activation.glsl's
# ACT_* codes (identity is ACT_NONE).
set(unary_float_ops relu sigmoid tanh gelu gelu_tanh exp log neg sqrt abs reciprocal floor ceil
    round sign sin cos erf softplus mish leaky_relu elu selu clip hard_sigmoid hard_swish tan asin
    acos atan sinh cosh asinh acosh atanh softsign thresholded_relu celu silu)
set(unary_int_ops neg abs sign)
vkgraph_shader_family(unary
  # identity has no shader: unary() copies the buffer, for every dtype.
  AXIS op ENUM ${unary_float_ops} identity not
  AXIS dtype DTYPE
  FLAGS epilogue identity relu leaky_relu sigmoid tanh gelu gelu_tanh clip hard_sigmoid
        hard_swish silu)
foreach(op ${unary_float_ops})
  string(TOUPPER ${op} OP)
  vkgraph_variant(unary unary_${op}_f32 ${CMAKE_CURRENT_LIST_DIR}/unary.comp KEY ${op} f32
                  DEFINES OP_${OP}=1 DTYPE_F32=1)
  vkgraph_variant(unary unary_${op}_f16 ${CMAKE_CURRENT_LIST_DIR}/unary.comp KEY ${op} f16
                  DEFINES OP_${OP}=1 DTYPE_F16=1)
endforeach()
foreach(op ${unary_int_ops})
  string(TOUPPER ${op} OP)
  vkgraph_variant(unary unary_${op}_i32 ${CMAKE_CURRENT_LIST_DIR}/unary.comp KEY ${op} i32
                  DEFINES OP_${OP}=1 DTYPE_I32=1)
  vkgraph_variant(unary unary_${op}_i64 ${CMAKE_CURRENT_LIST_DIR}/unary.comp KEY ${op} i64
                  DEFINES OP_${OP}=1 DTYPE_I64=1)
endforeach()
vkgraph_variant(unary unary_not_bool ${CMAKE_CURRENT_LIST_DIR}/unary.comp KEY not bool
                DEFINES OP_NOT=1 DTYPE_BOOL=1)
