# Pooling shader variants, from one source per kernel.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader(max_pool_f32 ${OPS}/pool.comp POOL_MAX=1)
vkgraph_shader(avg_pool_f32 ${OPS}/pool.comp POOL_AVG=1)
vkgraph_shader(global_max_pool_f32 ${OPS}/pool_global.comp GLOBAL_MAX=1)
vkgraph_shader(global_avg_pool_f32 ${OPS}/pool_global.comp GLOBAL_AVG=1)
