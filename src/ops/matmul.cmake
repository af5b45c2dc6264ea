# Matmul kernels: the tiled GEMM (plus its split-K partial and reduce passes) and the small-M
# GEMV, the latter with a portable shared-memory reduction and a subgroup one. Tile shapes and operand layouts are specialization constants
# (see matmul_config.h and matmul.cpp); bias and the fused activation are push constants.
vkgraph_shader(matmul_tiled_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp)
vkgraph_shader(matmul_tiled_splitk_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp SPLIT_K=1)
vkgraph_shader(matmul_splitk_reduce_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_splitk_reduce.comp)
vkgraph_shader(matmul_gemv_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_gemv.comp)
vkgraph_shader(matmul_gemv_subgroup_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_gemv.comp
               SUBGROUP_REDUCE=1)
