# Matmul kernels: the tiled GEMM (plus its split-K partial and reduce passes) and the small-M
# GEMV, the latter with a portable shared-memory reduction and a subgroup one, each for
# float32 and float16 tensors (float16 computes in fp32). Tile shapes and operand layouts are
# specialization constants (see matmul_config.h and matmul.cpp); bias and the fused activation
# are push constants.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader_family(matmul_tiled AXIS vec4 BOOL AXIS split_k BOOL AXIS dtype DTYPE)
vkgraph_shader_family(matmul_splitk_reduce AXIS dtype DTYPE)
vkgraph_shader_family(matmul_gemv AXIS subgroup BOOL AXIS dtype DTYPE)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_variant(matmul_tiled matmul_tiled_${dtype} ${OPS}/matmul_tiled.comp KEY 0 0 ${dtype}
                  DEFINES DTYPE_${DT}=1)
  vkgraph_variant(matmul_tiled matmul_tiled_splitk_${dtype} ${OPS}/matmul_tiled.comp
                  KEY 0 1 ${dtype} DEFINES SPLIT_K=1 DTYPE_${DT}=1)
  vkgraph_variant(matmul_tiled matmul_tiled_vec4_${dtype} ${OPS}/matmul_tiled.comp
                  KEY 1 0 ${dtype} DEFINES VEC4_TILE=1 DTYPE_${DT}=1)
  vkgraph_variant(matmul_tiled matmul_tiled_vec4_splitk_${dtype} ${OPS}/matmul_tiled.comp
                  KEY 1 1 ${dtype} DEFINES VEC4_TILE=1 SPLIT_K=1 DTYPE_${DT}=1)
  vkgraph_variant(matmul_splitk_reduce matmul_splitk_reduce_${dtype}
                  ${OPS}/matmul_splitk_reduce.comp KEY ${dtype} DEFINES DTYPE_${DT}=1)
  vkgraph_variant(matmul_gemv matmul_gemv_${dtype} ${OPS}/matmul_gemv.comp KEY 0 ${dtype}
                  DEFINES DTYPE_${DT}=1)
  vkgraph_variant(matmul_gemv matmul_gemv_subgroup_${dtype} ${OPS}/matmul_gemv.comp
                  KEY 1 ${dtype} DEFINES SUBGROUP_REDUCE=1 DTYPE_${DT}=1)
endforeach()
# fp16 on tensor cores (GL_NV_cooperative_matrix), one variant per CoopmatTile: subgroups along
# M and N, 16x16 fragments per subgroup along M and N, slice depth, shared-memory stages, slices
# in flight (depth: prefetched register sets), split-K (none; fp32 partials for
# matmul_splitk_reduce; or fused: reduced by the tile's last workgroup in the same dispatch),
# B stored [N, K] (b_t: a Linear weight read transposed, N may end inside a tile). 2244 is the
# default (the fastest in the H200 sweeps, docs/bench/2026-11-29-h200-kernels.md) and 2222 the
# small tile for products of few default tiles; the smaller ones (32 x 64, 32 x 32) and the
# 64-deep slices are for the shape-based choice (mm16.pick, pick_coopmat_tile) on batch-1
# transformer GEMMs (M 128, N and K 768..3072), whose 128 x 128 grid is a handful of
# workgroups; depth 2 and 3 for the choice's mm16.depth. Add shapes here to sweep them with
# the mm16.* tuning knobs.
vkgraph_shader_family(matmul_coopmat
  AXIS sg_m UINT AXIS sg_n UINT AXIS frag_m UINT AXIS frag_n UINT AXIS bk UINT AXIS stages UINT
  AXIS depth UINT AXIS split ENUM none partials fused AXIS b_t BOOL AXIS dtype DTYPE)
foreach(shape 2244:32:2:1 2222:32:2:1 2212:32:2:1 1222:32:2:1 2211:32:2:1 2222:64:2:1
              2212:64:2:1 2211:64:2:1 2244:32:2:2 2222:32:2:2 2212:32:2:2 1222:32:2:2
              2211:32:2:2 2222:32:2:3 2212:32:2:3 1222:32:2:3 2211:32:2:3)
  string(REPLACE ":" ";" parts ${shape})
  list(GET parts 0 grid)
  list(GET parts 1 bk)
  list(GET parts 2 stages)
  list(GET parts 3 depth)
  string(SUBSTRING ${grid} 0 1 sg_m)
  string(SUBSTRING ${grid} 1 1 sg_n)
  string(SUBSTRING ${grid} 2 1 fm)
  string(SUBSTRING ${grid} 3 1 fn)
  set(defs SG_M=${sg_m} SG_N=${sg_n} FM=${fm} FN=${fn} BK=${bk} STAGES=${stages} DEPTH=${depth})
  set(split_code 0)
  foreach(split none partials fused)
    foreach(bt 0 1)
      set(name matmul_coopmat_${grid}_k${bk}s${stages})
      if(depth GREATER 1)
        string(APPEND name d${depth})
      endif()
      if(split STREQUAL "partials")
        string(APPEND name _splitk)
      elseif(split STREQUAL "fused")
        string(APPEND name _fusedk)
      endif()
      if(bt)
        string(APPEND name _bt)
      endif()
      vkgraph_variant(matmul_coopmat ${name}_f16 ${OPS}/matmul_coopmat.comp
                      KEY ${sg_m} ${sg_n} ${fm} ${fn} ${bk} ${stages} ${depth} ${split} ${bt} f16
                      DEFINES ${defs} SPLIT_K=${split_code} B_T=${bt})
    endforeach()
    math(EXPR split_code "${split_code} + 1")
  endforeach()
endforeach()
