// com.microsoft MatMulNBits (quant_nbits.comp): weight-only low-bit matmul. The packed codes
// stay packed in memory and are unpacked in registers; M = 1 (decode) runs a GEMV that streams
// each weight word once, larger M a tiled kernel that dequantizes each weight slice once per
// 32 rows of a.
#include "quant_util.h"
#include "vkgraph/ops/tuning.h"
#include "vkgraph/vk/context.h"

namespace vkgraph::ops {

TensorRef matmul_nbits(ComputeGraph& g, TensorRef a, TensorRef b, TensorRef scales,
                       const NBitsParams& params, std::optional<TensorRef> zero_points,
                       std::optional<TensorRef> g_idx, std::optional<TensorRef> bias) {
  const std::string op = "matmul_nbits";
  const TensorInfo ai = g.info(a);
  const std::string suffix = shader_suffix(float_dtype(g, ai.dtype, op));
  require_dtype(g, scales, ai.dtype, op);
  if (bias) require_dtype(g, *bias, ai.dtype, op);
  require_8bit_storage(g, op);
  const int64_t k = params.k, n = params.n, bits = params.bits, block = params.block_size;
  check(bits == 2 || bits == 4 || bits == 8, ErrorKind::Unsupported,
        op + ": bits = " + std::to_string(bits) + " (supported: 2, 4, 8)");
  check(block >= 16 && (block & (block - 1)) == 0, ErrorKind::InvalidArgument,
        op + ": block_size must be a power of two >= 16, got " + std::to_string(block));
  check(k > 0 && n > 0, ErrorKind::InvalidArgument, op + ": K and N must be positive");
  check(!ai.shape.empty() && ai.shape.back() == k, ErrorKind::InvalidArgument,
        op + ": a " + shape_str(ai.shape) + " must end in K = " + std::to_string(k));
  const int64_t blocks = (k + block - 1) / block;
  const int64_t blob = block * bits / 8;
  const TensorInfo bi = g.info(b);
  check(bi.dtype == DType::UInt8 && numel(bi.shape) == checked_mul(n, blocks * blob, op),
        ErrorKind::InvalidArgument,
        op + ": b must be uint8 [N, n_blocks, blob] = [" + std::to_string(n) + ", " +
            std::to_string(blocks) + ", " + std::to_string(blob) + "], got " +
            dtype_name(bi.dtype) + " " + shape_str(bi.shape));
  check(numel(g.info(scales).shape) == n * blocks, ErrorKind::InvalidArgument,
        op + ": scales must have N * n_blocks = " + std::to_string(n * blocks) + " values, got " +
            shape_str(g.info(scales).shape));
  const int64_t zero_row_bytes = (blocks * bits + 7) / 8;
  int32_t zero_mode = 0;
  if (zero_points) {
    const TensorInfo zi = g.info(*zero_points);
    if (zi.dtype == DType::UInt8) {
      zero_mode = 1;
      check(numel(zi.shape) == n * zero_row_bytes, ErrorKind::InvalidArgument,
            op + ": packed zero points must have N * ceil(n_blocks * bits / 8) = " +
                std::to_string(n * zero_row_bytes) + " bytes, got " + shape_str(zi.shape));
    } else {
      zero_mode = 2;
      check(zi.dtype == ai.dtype && numel(zi.shape) == n * blocks, ErrorKind::InvalidArgument,
            op + ": zero points must be uint8 (packed) or " + dtype_name(ai.dtype) + " [N, " +
                "n_blocks] (unpacked), got " + dtype_name(zi.dtype) + " " + shape_str(zi.shape));
    }
  }
  if (g_idx)
    check(g.info(*g_idx).dtype == DType::Int32 && numel(g.info(*g_idx).shape) == k,
          ErrorKind::InvalidArgument, op + ": g_idx must be int32 [K]");
  if (bias)
    check(numel(g.info(*bias).shape) == n, ErrorKind::InvalidArgument,
          op + ": bias must have N = " + std::to_string(n) + " values");

  // Bindings the variant does not read still need a buffer: tiny constants.
  auto dummy = [&](DType dtype) { return g.add_constant(HostTensor(dtype, {4})); };
  const DType fdt = ai.dtype;
  TensorRef zp_packed = zero_mode == 1 ? *zero_points : dummy(DType::UInt8);
  TensorRef zp_float = zero_mode == 2 ? *zero_points : dummy(fdt);
  TensorRef gi = g_idx ? *g_idx : dummy(DType::Int32);
  TensorRef bs = bias ? *bias : dummy(fdt);

  const int64_t m = numel(ai.shape) / k;
  Shape out = ai.shape;
  out.back() = n;
  TensorRef y = g.add_tensor(out, fdt);
  if (m == 0) return y;
  PushConstants pc;
  pc.add(checked_i32(m, op, "rows")).add(checked_i32(n, op, "N")).add(checked_i32(k, op, "K"));
  pc.add(static_cast<int32_t>(bits)).add(static_cast<int32_t>(block));
  pc.add(checked_i32(blocks, op, "blocks")).add(checked_i32(blocks * blob / 4, op, "row words"));
  pc.add(checked_i32(zero_row_bytes, op, "zero point bytes")).add(zero_mode);
  pc.add(int32_t{g_idx.has_value()}).add(int32_t{bias.has_value()});
  DispatchDesc d;
  const bool gemv = m == 1;
  // The GEMV's rows: one subgroup each where the device reduces across subgroups (whole
  // subgroups of a 128-invocation workgroup), else 32 invocations each. Tuning knob
  // "nbits.subgroup" = 0 forces the shared-memory variant.
  constexpr uint32_t kGemvThreads = 128;
  const vk::DeviceFeatures& f = g.context().features();
  const Tuning* tuning = g.options().tuning.get();
  const bool subgroup = gemv && f.subgroup_arithmetic && f.subgroup_size > 0 &&
                        (f.subgroup_size & (f.subgroup_size - 1)) == 0 &&
                        kGemvThreads % f.subgroup_size == 0 &&
                        (!tuning || tuning->knob("nbits.subgroup", 1) != 0);
  // Rows of b each subgroup computes together, reusing a's loads: as many as keep 1024
  // workgroups (H200, 4-bit, K 4096: N 4096 at 1 row 455 GB/s, at 2 rows 415; N 11008 at 2
  // rows 728, at 1 row 662, at 4 rows 677). Knob "nbits.rows".
  const uint32_t subgroups = subgroup ? kGemvThreads / f.subgroup_size : 1;
  uint32_t fit_rows = 1;
  while (fit_rows < 4 && n / (subgroups * fit_rows * 2) >= 1024) fit_rows *= 2;
  const uint32_t sg_rows = std::max(1u, tuning ? tuning->knob("nbits.rows", fit_rows) : fit_rows);
  const uint32_t rows = subgroup ? subgroups * sg_rows : kGemvThreads / 32;
  d.shader = std::string(!gemv      ? "quant_nbits_tiled_"
                         : subgroup ? "quant_nbits_gemv_subgroup_"
                                    : "quant_nbits_gemv_") +
             suffix;
  d.bindings = {{a, Access::Read},         {b, Access::Read},        {scales, Access::Read},
                {zp_packed, Access::Read}, {zp_float, Access::Read}, {gi, Access::Read},
                {bs, Access::Read},        {y, Access::Write}};
  if (gemv) {
    d.groups = {static_cast<uint32_t>((n + rows - 1) / rows), 1, 1};
    const uint32_t unroll = std::max(1u, tuning ? tuning->knob("nbits.unroll", 4) : 4u);
    d.spec = {rows, sg_rows, unroll};
  } else {
    d.groups = {static_cast<uint32_t>((n + 63) / 64), static_cast<uint32_t>((m + 31) / 32), 1};
  }
  check(d.groups[0] <= 65535 && d.groups[1] <= 65535, ErrorKind::Unsupported,
        op + ": M = " + std::to_string(m) + ", N = " + std::to_string(n) +
            " exceed the dispatch limits");
  d.local = {gemv ? kGemvThreads : 256u, 1, 1};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return y;
}

}  // namespace vkgraph::ops
