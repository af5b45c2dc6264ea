vkgraph_shader(nll_loss_f32 ${CMAKE_CURRENT_LIST_DIR}/loss.comp)
