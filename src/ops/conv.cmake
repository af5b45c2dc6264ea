# Convolution shader variants, each for float32 and float16 tensors (DTYPE_*; float16 computes
# in float32). The implicit GEMM comes in two tile shapes (64x64 for large layers, 32x32 so
# small layers still spread over many workgroups), each general or pointwise. CONV3D variants
# decode a depth window; the others serve 1-D and 2-D (depth 1) convolutions, pointwise ones
# any rank. Kernels that apply the epilogue also come with RESIDUAL=1 ("_res"), which adds a
# skip-connection tensor before the activation.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  set(GEMM BK=16 TM=4 TN=4 DTYPE_${DT}=1)
  foreach(res "" _res)
    if(res)
      set(R RESIDUAL=1)
    else()
      set(R "")
    endif()
    foreach(tile 64 32)
      vkgraph_shader(conv2d_gemm${tile}${res}_${dtype} ${OPS}/conv.comp BM=${tile} BN=${tile}
                     ${GEMM} ${R})
      vkgraph_shader(conv2d_pointwise${tile}${res}_${dtype} ${OPS}/conv.comp BM=${tile}
                     BN=${tile} ${GEMM} POINTWISE=1 ${R})
      vkgraph_shader(conv3d_gemm${tile}${res}_${dtype} ${OPS}/conv.comp BM=${tile} BN=${tile}
                     ${GEMM} CONV3D=1 ${R})
    endforeach()
    vkgraph_shader(conv2d_splitk_reduce${res}_${dtype} ${OPS}/conv_splitk_reduce.comp
                   DTYPE_${DT}=1 ${R})
    vkgraph_shader(conv2d_depthwise${res}_${dtype} ${OPS}/conv_depthwise.comp DTYPE_${DT}=1
                   ${R})
    vkgraph_shader(conv3d_depthwise${res}_${dtype} ${OPS}/conv_depthwise.comp CONV3D=1
                   DTYPE_${DT}=1 ${R})
  endforeach()
  # Split-K partial passes (no epilogue): only small tiles, since splitting happens when tiles
  # are few.
  vkgraph_shader(conv2d_gemm32_splitk_${dtype} ${OPS}/conv.comp BM=32 BN=32 ${GEMM} SPLIT_K=1)
  vkgraph_shader(conv2d_pointwise32_splitk_${dtype} ${OPS}/conv.comp BM=32 BN=32 ${GEMM}
                 POINTWISE=1 SPLIT_K=1)
  vkgraph_shader(conv3d_gemm32_splitk_${dtype} ${OPS}/conv.comp BM=32 BN=32 ${GEMM} SPLIT_K=1
                 CONV3D=1)
  vkgraph_shader(conv_transpose2d_${dtype} ${OPS}/conv_transpose.comp DTYPE_${DT}=1)
endforeach()
