vkgraph_shader(softmax_f32 ${CMAKE_CURRENT_LIST_DIR}/softmax.comp LOG=0)
vkgraph_shader(log_softmax_f32 ${CMAKE_CURRENT_LIST_DIR}/softmax.comp LOG=1)
