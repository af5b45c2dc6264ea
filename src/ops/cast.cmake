# Casts between f32, i32, i64 and bool; float16 converts to and from float32 only (cast.cpp
# goes through float32 for the other types).
vkgraph_shader_family(cast
  AXIS from DTYPE
  AXIS to DTYPE)
foreach(from f32 i32 i64 bool)
  foreach(to f32 i32 i64 bool)
    if(NOT from STREQUAL to)
      string(TOUPPER ${from} FROM)
      string(TOUPPER ${to} TO)
      vkgraph_variant(cast cast_${from}_${to} ${CMAKE_CURRENT_LIST_DIR}/cast.comp
                      KEY ${from} ${to} DEFINES FROM_${FROM}=1 TO_${TO}=1)
    endif()
  endforeach()
endforeach()
vkgraph_variant(cast cast_f16_f32 ${CMAKE_CURRENT_LIST_DIR}/cast.comp KEY f16 f32
                DEFINES FROM_F16=1 TO_F32=1)
vkgraph_variant(cast cast_f32_f16 ${CMAKE_CURRENT_LIST_DIR}/cast.comp KEY f32 f16
                DEFINES FROM_F32=1 TO_F16=1)
