# Quantization shader variants (quant.cpp). Quantized tensors are bytes whose signedness is a
# push constant, so variants differ only in what they compute and the float dtype.
set(OPS ${CMAKE_CURRENT_LIST_DIR})
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_shader(quant_quantize_${dtype} ${OPS}/quant.comp QUANTIZE=1 DTYPE_${DT}=1)
  vkgraph_shader(quant_nbits_gemv_${dtype} ${OPS}/quant_nbits_gemv.comp DTYPE_${DT}=1)
  vkgraph_shader(quant_nbits_gemv_subgroup_${dtype} ${OPS}/quant_nbits_gemv.comp
                 SUBGROUP_REDUCE=1 DTYPE_${DT}=1)
  vkgraph_shader(quant_nbits_gemv_wide_${dtype} ${OPS}/quant_nbits_gemv_wide.comp DTYPE_${DT}=1)
  vkgraph_shader(quant_nbits_tiled_${dtype} ${OPS}/quant_nbits_tiled.comp DTYPE_${DT}=1)
  vkgraph_shader(quant_nbits_dequant_${dtype} ${OPS}/quant_nbits_dequant.comp DTYPE_${DT}=1)
endforeach()
# The wide GEMV's float16-arithmetic variant for 4-bit codes (knob nbits.half_math).
vkgraph_shader(quant_nbits_gemv_wide_half_f16 ${OPS}/quant_nbits_gemv_wide.comp DTYPE_F16=1
               HALF_MATH=1)
vkgraph_shader(quant_dequantize_u8 ${OPS}/quant.comp DEQUANTIZE=1)
vkgraph_shader(quant_dequantize_i32 ${OPS}/quant.comp DEQUANTIZE=1 X_I32=1)
vkgraph_shader(quant_widen ${OPS}/quant.comp WIDEN=1)
vkgraph_shader(quant_narrow ${OPS}/quant.comp NARROW=1)
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_shader(quant_minmax_${dtype} ${OPS}/quant_dynamic.comp MINMAX=1 DTYPE_${DT}=1)
  vkgraph_shader(quant_dynamic_pack_${dtype} ${OPS}/quant_dynamic.comp PACK=1 DTYPE_${DT}=1)
endforeach()
vkgraph_shader(quant_dynamic_params ${OPS}/quant_dynamic.comp PARAMS=1)
vkgraph_shader(quant_matmul_i32 ${OPS}/quant_gemm.comp)
vkgraph_shader(quant_matmul_requant ${OPS}/quant_gemm.comp REQUANT=1)
vkgraph_shader(quant_conv_i32 ${OPS}/quant_gemm.comp CONV=1)
vkgraph_shader(quant_conv_requant ${OPS}/quant_gemm.comp CONV=1 REQUANT=1)
vkgraph_shader(quant_add ${OPS}/quant_add.comp)
vkgraph_shader(quant_mul ${OPS}/quant_add.comp MUL=1)
vkgraph_shader(quant_table ${OPS}/quant_table.comp)
# QDQ pooling on bytes (pool.cpp's MaxPool of Int8 / UInt8, quant.cpp's qlinear_global_avg_pool).
vkgraph_shader(quant_max_pool ${OPS}/pool.comp POOL_MAX=1 QUANT8=1 DTYPE_F32=1)
vkgraph_shader(quant_global_avg_pool ${OPS}/pool_global.comp GLOBAL_AVG=1 QUANT8=1 DTYPE_F32=1)
# The packed integer GEMM (quant_packed.cpp): 8-bit operands four to a word, weights packed at
# load. Tiles as conv.cmake's (64 for large layers, 32 so small ones spread over many
# workgroups); split-K partial passes only in small tiles, since splitting happens when tiles
# are few; dot=1 sums with VK_KHR_shader_integer_dot_product's instructions, dot=0 unpacks.
# Kernels without tiles have tile 0. coopmat: 0, or the int8 tensor-core fragments' N (16 or 8,
# whichever shape the device lists) for the COOPMAT variants below.
vkgraph_shader_family(qgemm
  AXIS kind ENUM conv conv_pointwise matmul matmul_dynamic matmul_dynamic_bytes splitk_reduce
    depthwise
  AXIS tile UINT
  AXIS requant BOOL
  AXIS split_k BOOL
  AXIS dot BOOL
  AXIS coopmat UINT
  AXIS dtype DTYPE)
foreach(kind conv conv_pointwise matmul)
  if(kind STREQUAL conv)
    set(K CONV=1)
  elseif(kind STREQUAL conv_pointwise)
    set(K CONV=1 POINTWISE=1)
  else()
    set(K "")
  endif()
  foreach(dot 0 1)
    foreach(tile 64 32)
      vkgraph_variant(qgemm qgemm_${kind}${tile}_i32_dot${dot} ${OPS}/quant_packed.comp
                      KEY ${kind} ${tile} 0 0 ${dot} 0 f32 DEFINES BM=${tile} BN=${tile} DOT=${dot} ${K})
      vkgraph_variant(qgemm qgemm_${kind}${tile}_requant_dot${dot} ${OPS}/quant_packed.comp
                      KEY ${kind} ${tile} 1 0 ${dot} 0 f32
                      DEFINES BM=${tile} BN=${tile} DOT=${dot} REQUANT=1 ${K})
    endforeach()
    vkgraph_variant(qgemm qgemm_${kind}32_splitk_dot${dot} ${OPS}/quant_packed.comp
                    KEY ${kind} 32 0 1 ${dot} 0 f32 DEFINES BM=32 BN=32 DOT=${dot} SPLIT_K=1 ${K})
  endforeach()
endforeach()
# matmul_dynamic: quantize_dynamic's linear layer (float a quantized as it loads, float out);
# matmul_dynamic_bytes: the same with a quantized once beforehand (quant_dynamic_pack). dtype:
# the float activation's, which the output, bias and residual share (f16: float16 mode).
# The integer kernels above keep the key f32.
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  foreach(dot 0 1)
    foreach(tile 64 32)
      vkgraph_variant(qgemm qgemm_matmul_dynamic${tile}_dot${dot}_${dtype}
                      ${OPS}/quant_packed.comp KEY matmul_dynamic ${tile} 0 0 ${dot} 0 ${dtype}
                      DEFINES BM=${tile} BN=${tile} DOT=${dot} DYNAMIC=1 DTYPE_${DT}=1)
      vkgraph_variant(qgemm qgemm_matmul_dynamic_bytes${tile}_dot${dot}_${dtype}
                      ${OPS}/quant_packed.comp KEY matmul_dynamic_bytes ${tile} 0 0 ${dot} 0 ${dtype}
                      DEFINES BM=${tile} BN=${tile} DOT=${dot} DYNAMIC=1 DYNAMIC_BYTES=1
                              DTYPE_${DT}=1)
    endforeach()
  endforeach()
  # The dynamic layer's split-K: matmul32_splitk partials, reduced with the float epilogue.
  vkgraph_variant(qgemm qgemm_splitk_reduce_dynamic_${dtype} ${OPS}/quant_packed_reduce.comp
                  KEY matmul_dynamic_bytes 0 0 1 0 0 ${dtype} DEFINES DYNAMIC=1 DTYPE_${DT}=1)
endforeach()
foreach(requant 0 1)
  vkgraph_variant(qgemm qgemm_splitk_reduce_${requant} ${OPS}/quant_packed_reduce.comp
                  KEY splitk_reduce 0 ${requant} 0 0 0 f32 DEFINES REQUANT=${requant})
  vkgraph_variant(qgemm qgemm_depthwise_${requant} ${OPS}/quant_depthwise.comp
                  KEY depthwise 0 ${requant} 0 0 0 f32 DEFINES REQUANT=${requant})
endforeach()
# The same kernels on int8 tensor cores (knob qgemm.coopmat): per fragment width, the tiles and
# the small tile's split-K partials as above; quantize_dynamic's layers only on quantized bytes.
# Width 1: the 16-wide kernels' staging and epilogue with the products summed without tensor
# cores (EMULATE), so that devices without them test all but the fragments (qgemm.coopmat=2).
foreach(frag 16 8 1)
  if(frag EQUAL 1)
    set(F COOPMAT=16 EMULATE=1)
  else()
    set(F COOPMAT=${frag})
  endif()
  foreach(kind conv conv_pointwise matmul)
    if(kind STREQUAL conv)
      set(K CONV=1)
    elseif(kind STREQUAL conv_pointwise)
      set(K CONV=1 POINTWISE=1)
    else()
      set(K "")
    endif()
    foreach(tile 64 32)
      vkgraph_variant(qgemm qgemm_${kind}${tile}_i32_coopmat${frag} ${OPS}/quant_packed.comp
                      KEY ${kind} ${tile} 0 0 0 ${frag} f32
                      DEFINES BM=${tile} BN=${tile} ${F} ${K})
      vkgraph_variant(qgemm qgemm_${kind}${tile}_requant_coopmat${frag} ${OPS}/quant_packed.comp
                      KEY ${kind} ${tile} 1 0 0 ${frag} f32
                      DEFINES BM=${tile} BN=${tile} ${F} REQUANT=1 ${K})
    endforeach()
    vkgraph_variant(qgemm qgemm_${kind}32_splitk_coopmat${frag} ${OPS}/quant_packed.comp
                    KEY ${kind} 32 0 1 0 ${frag} f32 DEFINES BM=32 BN=32 ${F} SPLIT_K=1 ${K})
  endforeach()
  foreach(dtype f32 f16)
    string(TOUPPER ${dtype} DT)
    foreach(tile 64 32)
      vkgraph_variant(qgemm qgemm_matmul_dynamic_bytes${tile}_coopmat${frag}_${dtype}
                      ${OPS}/quant_packed.comp KEY matmul_dynamic_bytes ${tile} 0 0 0 ${frag} ${dtype}
                      DEFINES BM=${tile} BN=${tile} ${F} DYNAMIC=1 DYNAMIC_BYTES=1 DTYPE_${DT}=1)
    endforeach()
  endforeach()
endforeach()
# The decode GEMV on integer dot products for 4-bit codes with a quantized to int8
# (MatMulNBits accuracy_level 4).
foreach(dtype f32 f16)
  string(TOUPPER ${dtype} DT)
  vkgraph_shader(quant_nbits_gemv_dot_${dtype} ${OPS}/quant_nbits_gemv_dot.comp DTYPE_${DT}=1)
endforeach()
