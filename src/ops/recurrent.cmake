foreach(cell rnn gru lstm)
  string(TOUPPER ${cell} CELL)
  foreach(dtype f32 f16)
    string(TOUPPER ${dtype} DTYPE)
    vkgraph_shader(recurrent_${cell}_${dtype} ${CMAKE_CURRENT_LIST_DIR}/recurrent.comp
                   CELL_${CELL}=1 DTYPE_${DTYPE}=1)
    vkgraph_shader(recurrent_step_${cell}_${dtype} ${CMAKE_CURRENT_LIST_DIR}/recurrent.comp
                   CELL_${CELL}=1 DTYPE_${DTYPE}=1 STEPWISE=1)
  endforeach()
endforeach()
