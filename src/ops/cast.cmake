foreach(from f32 i32 i64 bool)
  foreach(to f32 i32 i64 bool)
    if(NOT from STREQUAL to)
      string(TOUPPER ${from} FROM)
      string(TOUPPER ${to} TO)
      vkgraph_shader(cast_${from}_${to} ${CMAKE_CURRENT_LIST_DIR}/cast.comp FROM_${FROM}=1
                     TO_${TO}=1)
    endif()
  endforeach()
endforeach()
# float16 (16-bit storage) converts to and from float32; cast.cpp goes through float32 for the
# other types.
vkgraph_shader(cast_f16_f32 ${CMAKE_CURRENT_LIST_DIR}/cast.comp FROM_F16=1 TO_F32=1)
vkgraph_shader(cast_f32_f16 ${CMAKE_CURRENT_LIST_DIR}/cast.comp FROM_F32=1 TO_F16=1)
