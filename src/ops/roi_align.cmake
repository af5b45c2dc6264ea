vkgraph_shader(roi_align_f32 ${CMAKE_CURRENT_LIST_DIR}/roi_align.comp)
