# Every shader variant, generated from one source each through defines.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(op add sub mul div max min pow mod fmod)
  string(TOUPPER ${op} OP)
  vkgraph_shader(binary_${op}_f32 ${OPS}/binary.comp OP_${OP}=1 DTYPE_F32=1)
  vkgraph_shader(binary_${op}_i32 ${OPS}/binary.comp OP_${OP}=1 DTYPE_I32=1)
  vkgraph_shader(binary_${op}_i64 ${OPS}/binary.comp OP_${OP}=1 DTYPE_I64=1)
endforeach()
