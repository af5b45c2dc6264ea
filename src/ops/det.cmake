vkgraph_shader(det_f32 ${CMAKE_CURRENT_LIST_DIR}/det.comp DTYPE_F32=1)
