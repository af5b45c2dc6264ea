# Pooling shader variants, from one source per kernel.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader_family(pool
  AXIS kind ENUM max_pool max_pool_indices avg_pool global_max_pool global_avg_pool
  AXIS dtype DTYPE)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_variant(pool max_pool_${dtype} ${OPS}/pool.comp KEY max_pool ${dtype}
                  DEFINES POOL_MAX=1 DTYPE_${DTYPE}=1)
  vkgraph_variant(pool max_pool_indices_${dtype} ${OPS}/pool.comp KEY max_pool_indices ${dtype}
                  DEFINES POOL_MAX=1 POOL_INDICES=1 DTYPE_${DTYPE}=1)
  vkgraph_variant(pool avg_pool_${dtype} ${OPS}/pool.comp KEY avg_pool ${dtype}
                  DEFINES POOL_AVG=1 DTYPE_${DTYPE}=1)
  vkgraph_variant(pool global_max_pool_${dtype} ${OPS}/pool_global.comp
                  KEY global_max_pool ${dtype} DEFINES GLOBAL_MAX=1 DTYPE_${DTYPE}=1)
  vkgraph_variant(pool global_avg_pool_${dtype} ${OPS}/pool_global.comp
                  KEY global_avg_pool ${dtype} DEFINES GLOBAL_AVG=1 DTYPE_${DTYPE}=1)
endforeach()
