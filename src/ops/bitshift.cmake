# Bit shifts of unsigned integers held in Int32 (8/16-bit) or Int64 (32/64-bit) tensors; the
# `direction` axis is ops::ShiftDirection.
vkgraph_shader_family(bitshift
  AXIS direction ENUM left right
  AXIS dtype DTYPE)
foreach(direction left right)
  string(TOUPPER ${direction} DIRECTION)
  foreach(dtype i32 i64)
    string(TOUPPER ${dtype} DTYPE)
    vkgraph_variant(bitshift bitshift_${direction}_${dtype} ${CMAKE_CURRENT_LIST_DIR}/bitshift.comp
                    KEY ${direction} ${dtype} DEFINES SHIFT_${DIRECTION}=1 DTYPE_${DTYPE}=1)
  endforeach()
endforeach()
