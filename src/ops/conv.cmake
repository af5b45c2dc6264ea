# Convolution shader variants. The implicit GEMM comes in two tile shapes (64x64 for large
# layers, 32x32 so small layers still spread over many workgroups), each stepping K by 16 or
# 32 (suffix k32: half the slices, so half the load latencies to wait out when a workgroup's K
# walk is short). Each is general (3-D or, with trivial depth windows, 2-D) or pointwise.
# Split-K partial passes come only with small tiles, since splitting happens when tiles are few.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
# The three GEMM kinds of one tile configuration; `name` is the part after the kind.
function(conv_gemm_variants name)
  vkgraph_shader(conv2d_gemm${name}_f32 ${OPS}/conv.comp ${ARGN})
  vkgraph_shader(conv2d_pointwise${name}_f32 ${OPS}/conv.comp ${ARGN} POINTWISE=1)
  vkgraph_shader(conv3d_gemm${name}_f32 ${OPS}/conv.comp ${ARGN} CONV3D=1)
endfunction()
foreach(bk 16 32)
  set(bk_suffix "")
  if(bk EQUAL 32)
    set(bk_suffix k32)
  endif()
  foreach(tile 64 32)
    conv_gemm_variants(${tile}${bk_suffix} BM=${tile} BN=${tile} BK=${bk} TM=4 TN=4)
  endforeach()
  conv_gemm_variants(32${bk_suffix}_splitk BM=32 BN=32 BK=${bk} TM=4 TN=4 SPLIT_K=1)
endforeach()
vkgraph_shader(conv2d_splitk_reduce_f32 ${OPS}/conv_splitk_reduce.comp)
vkgraph_shader(conv2d_depthwise_f32 ${OPS}/conv_depthwise.comp)
vkgraph_shader(conv3d_depthwise_f32 ${OPS}/conv_depthwise.comp CONV3D=1)
vkgraph_shader(conv_transpose2d_f32 ${OPS}/conv_transpose.comp)
