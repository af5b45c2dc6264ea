#include "vkgraph/ops/attention.h"

#include <limits>

#include "op_util.h"

namespace vkgraph::ops {
namespace {

constexpr const char* kOp = "attention";
constexpr uint32_t kWorkgroup = 64;

uint32_t u32(int64_t v, const std::string& what) {
  check(v >= 0 && v <= std::numeric_limits<uint32_t>::max(), ErrorKind::Unsupported,
        std::string(kOp) + ": " + what + " " + std::to_string(v) + " exceeds 32 bits");
  return static_cast<uint32_t>(v);
}

// A permuted view as the kernel reads it: four dims and the element strides of each in the
// stored tensor (a rank-3 view gets a leading batch of 1).
struct Strided {
  Shape shape;
  std::array<int64_t, 4> stride{};
  std::string text;  // for errors
};

Strided strided(ComputeGraph& g, const PermutedView& view, const std::string& what) {
  const Shape stored = g.info(view.tensor).shape;
  check(stored.size() == 3 || stored.size() == 4, ErrorKind::InvalidArgument,
        std::string(kOp) + ": " + what + " must be rank 3 or 4, got " + shape_str(stored));
  std::vector<int64_t> perm = view.perm;  // empty: as stored (resolve_perm would reverse)
  if (perm.empty())
    for (size_t i = 0; i < stored.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  perm = resolve_perm(stored, perm, kOp);
  std::vector<int64_t> row_major(stored.size(), 1);
  for (size_t i = stored.size() - 1; i > 0; --i) row_major[i - 1] = row_major[i] * stored[i];
  Strided s;
  const size_t lead = 4 - stored.size();
  s.shape.assign(lead, 1);
  for (size_t i = 0; i < perm.size(); ++i) {
    s.shape.push_back(stored[perm[i]]);
    s.stride[lead + i] = row_major[perm[i]];
  }
  s.text = what + " " + shape_str(Shape(s.shape.begin() + lead, s.shape.end()));
  u32(numel(stored), what + " elements");
  return s;
}

// Query rows and key rows per workgroup: the shared tiles, (BR + 2 BC) D + BR BC floats, fit
// attention.comp's 7168 (28 KiB), and BR D <= 2048 accumulators over 64 invocations.
std::pair<uint32_t, uint32_t> tile_rows(int64_t d) {
  if (d <= 64) return {32, 32};
  if (d <= 128) return {16, 16};
  return {8, 8};
}

// Whether attention_coopmat.comp takes the problem: float16 storage on a device with 16x16x16
// fp16 cooperative matrices and subgroups of 32 (its workgroup is one), head dim 64 or 128.
// VKGRAPH_TUNE=attention.coopmat=0 turns it off (to compare with the portable kernel).
bool coopmat_fits(ComputeGraph& g, const std::string& dtype, int64_t d) {
  const vk::DeviceFeatures& f = g.context().features();
  return dtype == "f16" && f.coopmat_f16_16x16x16 && f.subgroup_size == 32 &&
         (d == 64 || d == 128) && tuned(g, "attention.coopmat", 1) != 0;
}

}  // namespace

TensorRef attention(ComputeGraph& g, const PermutedView& q, const PermutedView& kt,
                    const PermutedView& v, std::optional<TensorRef> mask,
                    const AttentionParams& params) {
  const std::string op = kOp;
  const DType float_type = mask ? float_dtype(g, q.tensor, {kt.tensor, v.tensor, *mask}, op)
                                : float_dtype(g, q.tensor, {kt.tensor, v.tensor}, op);
  const std::string dtype = shader_suffix(float_type);
  const Strided qs = strided(g, q, "q"), ks = strided(g, kt, "kᵀ"), vs = strided(g, v, "v");
  const int64_t B = qs.shape[0], H = qs.shape[1], S = qs.shape[2], D = qs.shape[3];
  const int64_t Hkv = ks.shape[1], Skv = ks.shape[3];
  const std::string shapes = qs.text + ", " + ks.text + ", " + vs.text;
  check(D >= 1 && D <= 256, ErrorKind::Unsupported,
        op + ": head dim " + std::to_string(D) + " is outside 1..256 (" + shapes + ")");
  check(ks.shape[2] == D && vs.shape[3] == D && vs.shape[2] == Skv && Skv >= 1 &&
            ks.shape[0] == vs.shape[0] && ks.shape[1] == vs.shape[1] &&
            (ks.shape[0] == B || ks.shape[0] == 1) && Hkv >= 1 && H % Hkv == 0,
        ErrorKind::InvalidArgument, op + ": operand shapes do not agree: " + shapes);

  PushConstants pc;
  pc.add(u32(S, "query rows")).add(u32(Skv, "key rows")).add(u32(D, "head dim"));
  pc.add(u32(H, "heads")).add(u32(H / Hkv, "heads per KV head"));
  for (const Strided* s : {&qs, &ks, &vs})
    for (size_t i = 0; i < 4; ++i) {
      // One K/V batch serves every query batch; dims of 1 are never stepped.
      bool broadcast = s->shape[i] == 1;
      pc.add(broadcast ? uint32_t{0} : u32(s->stride[i], "stride"));
    }
  const Shape scores{B, H, S, Skv};
  if (mask) {
    const Shape ms = g.info(*mask).shape;
    check(ms.size() <= 4, ErrorKind::InvalidArgument,
          op + ": mask " + shape_str(ms) + " has more than 4 dims");
    for (size_t i = 0; i < ms.size(); ++i)
      check(ms[i] == 1 || ms[i] == scores[4 - ms.size() + i], ErrorKind::InvalidArgument,
            op + ": mask " + shape_str(ms) + " does not broadcast to the scores " +
                shape_str(scores));
    std::vector<int32_t> st = broadcast_strides(ms, scores);
    for (size_t i = 0; i < 4; ++i) pc.add(static_cast<uint32_t>(st[st.size() - 4 + i]));
  } else {
    for (int i = 0; i < 4; ++i) pc.add(uint32_t{0});
  }
  pc.add(params.scale).add(params.causal ? uint32_t{1} : uint32_t{0});

  const bool coopmat = coopmat_fits(g, dtype, D);
  const auto [br, bc] = coopmat ? std::pair<uint32_t, uint32_t>{16, 32} : tile_rows(D);
  const int64_t row_blocks = (S + br - 1) / br;
  check(row_blocks <= 65535 && B * H <= 65535, ErrorKind::Unsupported,
        op + ": " + std::to_string(row_blocks) + " row blocks x " + std::to_string(B * H) +
            " heads exceed 65535 workgroups per dimension");
  u32(B * H * S * D, "output elements");
  const Shape out_shape = g.info(q.tensor).shape.size() == 3 ? Shape{H, S, D} : Shape{B, H, S, D};
  TensorRef out = g.add_tensor(out_shape, g.info(q.tensor).dtype);
  DispatchDesc d;
  const std::string masked = mask ? "mask_" : "";
  d.shader = coopmat ? "attention_coopmat_" + masked + "d" + std::to_string(D) + "_f16"
                     : "attention_" + masked + dtype;
  d.bindings = {{q.tensor, Access::Read},
                {kt.tensor, Access::Read},
                {v.tensor, Access::Read},
                {out, Access::Write}};
  if (mask) d.bindings.push_back({*mask, Access::Read});
  d.groups = {static_cast<uint32_t>(row_blocks), static_cast<uint32_t>(B * H), 1};
  d.local = {coopmat ? 32u : kWorkgroup, 1, 1};
  if (!coopmat) d.spec = {br, bc};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return out;
}

}  // namespace vkgraph::ops
