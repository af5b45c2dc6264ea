# Convolution shader variants. The implicit GEMM comes in two tile shapes (64x64 for large
# layers, 32x32 so small layers still spread over many workgroups), each general or pointwise.
# CONV3D variants decode a depth window; the others serve 1-D and 2-D (depth 1) convolutions,
# pointwise ones any rank.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(tile 64 32)
  vkgraph_shader(conv2d_gemm${tile}_f32 ${OPS}/conv.comp BM=${tile} BN=${tile} BK=16 TM=4 TN=4)
  vkgraph_shader(conv2d_pointwise${tile}_f32 ${OPS}/conv.comp BM=${tile} BN=${tile} BK=16 TM=4
                 TN=4 POINTWISE=1)
  vkgraph_shader(conv3d_gemm${tile}_f32 ${OPS}/conv.comp BM=${tile} BN=${tile} BK=16 TM=4 TN=4
                 CONV3D=1)
endforeach()
# Split-K partial passes: only small tiles, since splitting happens when tiles are few.
vkgraph_shader(conv2d_gemm32_splitk_f32 ${OPS}/conv.comp BM=32 BN=32 BK=16 TM=4 TN=4 SPLIT_K=1)
vkgraph_shader(conv2d_pointwise32_splitk_f32 ${OPS}/conv.comp BM=32 BN=32 BK=16 TM=4 TN=4
               POINTWISE=1 SPLIT_K=1)
vkgraph_shader(conv3d_gemm32_splitk_f32 ${OPS}/conv.comp BM=32 BN=32 BK=16 TM=4 TN=4 SPLIT_K=1
               CONV3D=1)
vkgraph_shader(conv2d_splitk_reduce_f32 ${OPS}/conv_splitk_reduce.comp)
vkgraph_shader(conv2d_depthwise_f32 ${OPS}/conv_depthwise.comp)
vkgraph_shader(conv3d_depthwise_f32 ${OPS}/conv_depthwise.comp CONV3D=1)
vkgraph_shader(conv_transpose2d_f32 ${OPS}/conv_transpose.comp)
