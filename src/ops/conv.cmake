# Convolution shader variants, each for float32 and float16 tensors (float16 computes in
# float32). The implicit GEMM comes in two tile shapes (64x64 for large layers, 32x32 so small
# layers still spread over many workgroups), each general or pointwise. CONV3D variants decode a
# depth window; the others serve 1-D and 2-D (depth 1) convolutions, pointwise ones any rank.
# Kernels that apply the epilogue also come with RESIDUAL=1 ("_res"), which adds a
# skip-connection tensor before the activation. Split-K partial passes (no epilogue) come only
# in small tiles, since splitting happens when tiles are few. Kernels without tiles have tile 0.
# conv2d_matvec: pointwise convolutions of one-pixel images (squeeze-excite FC layers).
# The _tc kinds are the implicit GEMM on tensor cores (conv_coopmat.comp, GL_NV_cooperative_matrix),
# float16 only, in the tiles below.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
vkgraph_shader_family(conv
  AXIS kind ENUM conv2d_gemm conv2d_pointwise conv3d_gemm conv2d_gemm_tc conv2d_pointwise_tc
                 conv3d_gemm_tc conv2d_splitk_reduce conv2d_depthwise conv3d_depthwise
                 conv_transpose conv2d_matvec
  AXIS tile UINT
  AXIS residual BOOL
  AXIS split_k BOOL
  AXIS dtype DTYPE)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  set(GEMM BK=16 TM=4 TN=4 DTYPE_${DT}=1)
  foreach(res 0 1)
    if(res)
      set(R RESIDUAL=1)
      set(r _res)
    else()
      set(R "")
      set(r "")
    endif()
    foreach(tile 64 32)
      vkgraph_variant(conv conv2d_gemm${tile}${r}_${dtype} ${OPS}/conv.comp
                      KEY conv2d_gemm ${tile} ${res} 0 ${dtype}
                      DEFINES BM=${tile} BN=${tile} ${GEMM} ${R})
      vkgraph_variant(conv conv2d_pointwise${tile}${r}_${dtype} ${OPS}/conv.comp
                      KEY conv2d_pointwise ${tile} ${res} 0 ${dtype}
                      DEFINES BM=${tile} BN=${tile} ${GEMM} POINTWISE=1 ${R})
      vkgraph_variant(conv conv3d_gemm${tile}${r}_${dtype} ${OPS}/conv.comp
                      KEY conv3d_gemm ${tile} ${res} 0 ${dtype}
                      DEFINES BM=${tile} BN=${tile} ${GEMM} CONV3D=1 ${R})
    endforeach()
    vkgraph_variant(conv conv2d_splitk_reduce${r}_${dtype} ${OPS}/conv_splitk_reduce.comp
                    KEY conv2d_splitk_reduce 0 ${res} 0 ${dtype} DEFINES DTYPE_${DT}=1 ${R})
    vkgraph_variant(conv conv2d_depthwise${r}_${dtype} ${OPS}/conv_depthwise.comp
                    KEY conv2d_depthwise 0 ${res} 0 ${dtype} DEFINES DTYPE_${DT}=1 ${R})
    vkgraph_variant(conv conv3d_depthwise${r}_${dtype} ${OPS}/conv_depthwise.comp
                    KEY conv3d_depthwise 0 ${res} 0 ${dtype} DEFINES CONV3D=1 DTYPE_${DT}=1 ${R})
    vkgraph_variant(conv conv2d_matvec${r}_${dtype} ${OPS}/conv_matvec.comp
                    KEY conv2d_matvec 0 ${res} 0 ${dtype} DEFINES DTYPE_${DT}=1 ${R})
  endforeach()
  vkgraph_variant(conv conv2d_gemm32_splitk_${dtype} ${OPS}/conv.comp
                  KEY conv2d_gemm 32 0 1 ${dtype} DEFINES BM=32 BN=32 ${GEMM} SPLIT_K=1)
  vkgraph_variant(conv conv2d_pointwise32_splitk_${dtype} ${OPS}/conv.comp
                  KEY conv2d_pointwise 32 0 1 ${dtype}
                  DEFINES BM=32 BN=32 ${GEMM} POINTWISE=1 SPLIT_K=1)
  vkgraph_variant(conv conv3d_gemm32_splitk_${dtype} ${OPS}/conv.comp
                  KEY conv3d_gemm 32 0 1 ${dtype} DEFINES BM=32 BN=32 ${GEMM} SPLIT_K=1 CONV3D=1)
  vkgraph_variant(conv conv_transpose_${dtype} ${OPS}/conv_transpose.comp
                  KEY conv_transpose 0 0 0 ${dtype} DEFINES DTYPE_${DT}=1)
endforeach()
# Tensor-core tiles: 64 (64x64, 2x2 subgroups of 2x2 fragments) and 128 (128x64, 2x2 subgroups
# of 4x2 fragments: twice the multiply-adds per loaded im2col element, for layers with many
# output channels), each also as a split-K partial pass.
foreach(kind conv2d_gemm conv2d_pointwise conv3d_gemm)
  set(K "")
  if(kind STREQUAL conv2d_pointwise)
    set(K POINTWISE=1)
  elseif(kind STREQUAL conv3d_gemm)
    set(K CONV3D=1)
  endif()
  foreach(tile 64 128)
    if(tile EQUAL 64)
      set(TC SG_M=2 SG_N=2 FM=2 FN=2 DTYPE_F16=1)
    else()
      set(TC SG_M=2 SG_N=2 FM=4 FN=2 DTYPE_F16=1)
    endif()
    vkgraph_variant(conv ${kind}_tc${tile}_f16 ${OPS}/conv_coopmat.comp
                    KEY ${kind}_tc ${tile} 0 0 f16 DEFINES ${TC} ${K})
    vkgraph_variant(conv ${kind}_tc${tile}_res_f16 ${OPS}/conv_coopmat.comp
                    KEY ${kind}_tc ${tile} 1 0 f16 DEFINES ${TC} ${K} RESIDUAL=1)
    vkgraph_variant(conv ${kind}_tc${tile}_splitk_f16 ${OPS}/conv_coopmat.comp
                    KEY ${kind}_tc ${tile} 0 1 f16 DEFINES ${TC} ${K} SPLIT_K=1)
  endforeach()
endforeach()
