# Matmul kernels: the tiled GEMM (plus its split-K partial and reduce passes) and the small-M
# GEMV, the latter with a portable shared-memory reduction and a subgroup one. Tile shapes and operand layouts are specialization constants
# (see matmul_config.h and matmul.cpp); bias and the fused activation are push constants.
vkgraph_shader(matmul_tiled_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp)
vkgraph_shader(matmul_tiled_splitk_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp SPLIT_K=1)
vkgraph_shader(matmul_tiled_vec4_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp VEC4_TILE=1)
vkgraph_shader(matmul_tiled_vec4_splitk_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp
               VEC4_TILE=1 SPLIT_K=1)
vkgraph_shader(matmul_tiled_f16 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp FP16_IO=1)
vkgraph_shader(matmul_tiled_vec4_f16 ${CMAKE_CURRENT_LIST_DIR}/matmul_tiled.comp VEC4_TILE=1
               FP16_IO=1)
vkgraph_shader(matmul_splitk_reduce_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_splitk_reduce.comp)
vkgraph_shader(matmul_gemv_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_gemv.comp)
vkgraph_shader(matmul_gemv_subgroup_f32 ${CMAKE_CURRENT_LIST_DIR}/matmul_gemv.comp
               SUBGROUP_REDUCE=1)
# fp16 on tensor cores (GL_NV_cooperative_matrix), one variant per CoopmatTile: subgroups along
# M and N, 16x16 fragments per subgroup along M and N, slice depth, shared-memory stages. Only
# the default is built: the H200 sweeps (docs/bench/2026-11-29-h200-kernels.md) found no other
# shape faster; add shapes here to sweep them again with VKGRAPH_TUNE mm16.*.
foreach(shape 2244:32:2)
  string(REPLACE ":" ";" parts ${shape})
  list(GET parts 0 grid)
  list(GET parts 1 bk)
  list(GET parts 2 stages)
  string(SUBSTRING ${grid} 0 1 sg_m)
  string(SUBSTRING ${grid} 1 1 sg_n)
  string(SUBSTRING ${grid} 2 1 fm)
  string(SUBSTRING ${grid} 3 1 fn)
  vkgraph_shader(matmul_coopmat_${grid}_k${bk}s${stages}_f16
                 ${CMAKE_CURRENT_LIST_DIR}/matmul_coopmat.comp SG_M=${sg_m} SG_N=${sg_n} FM=${fm}
                 FN=${fn} BK=${bk} STAGES=${stages})
endforeach()
