# Binary elementwise ops with NumPy broadcasting; the `op` axis is ops::BinaryOp. Same-shaped
# operands take the index-free vec4 variant (not for int64).
set(OPS ${CMAKE_CURRENT_LIST_DIR})
set(binary_ops add sub mul div max min pow mod fmod)
vkgraph_shader_family(binary
  AXIS op ENUM add sub mul div max min pow mod fmod=FMod
  AXIS dtype DTYPE
  AXIS vec4 BOOL)
foreach(op ${binary_ops})
  string(TOUPPER ${op} OP)
  foreach(dtype f32 f16 i32 i64)
    string(TOUPPER ${dtype} DT)
    vkgraph_variant(binary binary_${op}_${dtype} ${OPS}/binary.comp KEY ${op} ${dtype} 0
                    DEFINES OP_${OP}=1 DTYPE_${DT}=1)
    if(NOT dtype STREQUAL "i64")
      vkgraph_variant(binary binary_${op}_${dtype}_vec4 ${OPS}/binary.comp KEY ${op} ${dtype} 1
                      DEFINES OP_${OP}=1 DTYPE_${DT}=1 VEC4=1)
    endif()
  endforeach()
endforeach()
