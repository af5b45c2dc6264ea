# Binary elementwise ops with NumPy broadcasting; the `op` axis is ops::BinaryOp. Same-shaped
# operands take the index-free vec4 variant (not for int64). `half_math`: float16 tensors
# computed in float16 (shaderFloat16) where the device has it, for the ops whose float16 result
# is bit for bit float32 arithmetic's rounded to float16 (Vulkan rounds +, -, * correctly; a
# product of two halves is exact in float32, a sum too unless one operand is below half an ulp
# of the other). Div (2.5 ulp in float16), Pow, Mod and FMod stay float32 arithmetic.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
set(binary_ops add sub mul div max min pow mod fmod)
vkgraph_shader_family(binary
  AXIS op ENUM add sub mul div max min pow mod fmod=FMod
  AXIS dtype DTYPE
  AXIS vec4 BOOL
  AXIS half_math BOOL)
foreach(op ${binary_ops})
  string(TOUPPER ${op} OP)
  foreach(dtype f32 f16 i32 i64)
    string(TOUPPER ${dtype} DT)
    vkgraph_variant(binary binary_${op}_${dtype} ${OPS}/binary.comp KEY ${op} ${dtype} 0 0
                    DEFINES OP_${OP}=1 DTYPE_${DT}=1)
    if(NOT dtype STREQUAL "i64")
      vkgraph_variant(binary binary_${op}_${dtype}_vec4 ${OPS}/binary.comp KEY ${op} ${dtype} 1 0
                      DEFINES OP_${OP}=1 DTYPE_${DT}=1 VEC4=1)
    endif()
  endforeach()
endforeach()
foreach(op add sub mul max min)
  string(TOUPPER ${op} OP)
  vkgraph_variant(binary binary_${op}_f16_h ${OPS}/binary.comp KEY ${op} f16 0 1
                  DEFINES OP_${OP}=1 DTYPE_F16=1 MATH_F16=1)
  vkgraph_variant(binary binary_${op}_f16_vec4_h ${OPS}/binary.comp KEY ${op} f16 1 1
                  DEFINES OP_${OP}=1 DTYPE_F16=1 MATH_F16=1 VEC4=1)
endforeach()
