# Pooling shader variants, from one source per kernel.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DTYPE)
  vkgraph_shader(max_pool_${dtype} ${OPS}/pool.comp POOL_MAX=1 DTYPE_${DTYPE}=1)
  vkgraph_shader(max_pool_indices_${dtype} ${OPS}/pool.comp POOL_MAX=1 POOL_INDICES=1
                 DTYPE_${DTYPE}=1)
  vkgraph_shader(avg_pool_${dtype} ${OPS}/pool.comp POOL_AVG=1 DTYPE_${DTYPE}=1)
  vkgraph_shader(global_max_pool_${dtype} ${OPS}/pool_global.comp GLOBAL_MAX=1 DTYPE_${DTYPE}=1)
  vkgraph_shader(global_avg_pool_${dtype} ${OPS}/pool_global.comp GLOBAL_AVG=1 DTYPE_${DTYPE}=1)
endforeach()
