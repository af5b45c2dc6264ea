#include "vkgraph/ops/attention.h"

#include <algorithm>
#include <limits>

#include "op_util.h"

namespace vkgraph::ops {
namespace {

constexpr const char* kOp = "attention";

uint32_t u32(int64_t v, const std::string& what) {
  check(v >= 0 && v <= std::numeric_limits<uint32_t>::max(), ErrorKind::Unsupported,
        std::string(kOp) + ": " + what + " " + std::to_string(v) + " exceeds 32 bits");
  return static_cast<uint32_t>(v);
}

// A view as the kernel reads it: four dims, the element stride of each and the element offset
// in the stored tensor (a rank-3 view gets a leading batch of 1).
struct Strided {
  Shape shape;
  std::array<int64_t, 4> stride{};
  int64_t offset = 0;
  std::string text;  // for errors
};

Strided strided(ComputeGraph& g, const StridedView& view, const std::string& what) {
  const Shape& shape = view.shape;
  check(shape.size() == 3 || shape.size() == 4, ErrorKind::InvalidArgument,
        std::string(kOp) + ": " + what + " must be rank 3 or 4, got " + shape_str(shape));
  check(view.strides.size() == shape.size(), ErrorKind::InvalidArgument,
        std::string(kOp) + ": " + what + " has " + std::to_string(view.strides.size()) +
            " strides for " + shape_str(shape));
  // The last element the view reads, which must lie in the tensor (no dim is empty here:
  // the shape checks of attention() come after, and an empty view reads nothing).
  const int64_t stored = numel(g.info(view.tensor).shape);
  int64_t last = view.offset;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    check(view.strides[i] >= 0 && shape[i] >= 0, ErrorKind::InvalidArgument,
          std::string(kOp) + ": " + what + " has a negative stride or dim");
    empty |= shape[i] == 0;
    last += (shape[i] - 1) * view.strides[i];
  }
  check(view.offset >= 0 && (empty || last < stored), ErrorKind::InvalidArgument,
        std::string(kOp) + ": " + what + " " + shape_str(shape) + " at offset " +
            std::to_string(view.offset) + " reads past its tensor's " + std::to_string(stored) +
            " elements");
  Strided s;
  const size_t lead = 4 - shape.size();
  s.shape.assign(lead, 1);
  for (size_t i = 0; i < shape.size(); ++i) {
    s.shape.push_back(shape[i]);
    s.stride[lead + i] = view.strides[i];
  }
  s.offset = view.offset;
  s.text = what + " " + shape_str(shape);
  u32(stored, what + " elements");
  return s;
}

// The portable kernel's tiling (attention.comp): BR query rows per workgroup, BC keys per tile,
// TPR invocations per row (the workgroup is BR * TPR).
struct Tiling {
  uint32_t br, bc, tpr;
};

// The shared floats attention.comp declares for a tiling: padded Q, Kᵀ and P tiles, V, and one
// word per invocation.
int64_t shared_floats(const Tiling& t, int64_t d) {
  return t.br * (d + 1) + d * (t.bc + 1) + t.bc * d + t.br * (t.bc + 1) + t.br * t.tpr;
}

// Key tiles shrink with the head dim so that the tiles fit 32 KiB (lavapipe's limit, below
// most GPUs'). Query rows per workgroup: the most (fewest K/V re-reads) that still give the grid
// at least kFillGroups workgroups, so that a batch-1 problem occupies a large GPU; at most 8 rows
// for D > 128. 96, not 128: 12 heads of 128 tokens (bert, gpt2) ran 7% faster as a whole model
// with 16 rows (96 workgroups) than with 8 (192) on an H100 (docs/bench/2026-12-06-session12.md).
// VKGRAPH_TUNE=attention.br=N overrides, to measure.
constexpr int64_t kFillGroups = 96;
constexpr int64_t kCoopmatFillGroups = 128;  // the tensor-core kernel's, as measured in session 9
Tiling tiling(ComputeGraph& g, int64_t d, int64_t s, int64_t bh) {
  const uint32_t bc = d <= 64 ? 32 : d <= 128 ? 16 : 8;
  uint32_t br = 8;
  for (uint32_t wider : {16u, 32u})
    if (d <= 256 / (wider / 8) && bh * ((s + wider - 1) / wider) >= kFillGroups) br = wider;
  br = tuned(g, "attention.br", br);
  check(br == 8 || br == 16 || br == 32, ErrorKind::InvalidArgument,
        std::string(kOp) + ": attention.br must be 8, 16 or 32");
  const Tiling t{br, bc, 8};
  check(shared_floats(t, d) * 4 <= 32768, ErrorKind::InvalidArgument,
        std::string(kOp) + ": attention.br=" + std::to_string(br) +
            " needs more than 32 KiB of"
            " shared memory at head dim " +
            std::to_string(d));
  return t;
}

// attention_coopmat.comp's keys per K / V tile (its BC) at head dim d.
int64_t coopmat_tile_keys(int64_t d) {
  return d == 64 ? 32 : 16;
}

// attention_coopmat.comp's shared memory with `subgroups` query-row subgroups and `key_split`
// subgroups splitting the keys, as it declares it: K and V tiles (32 keys at head dim 64, else
// 16; rows padded by 16 bytes), one set per key-splitting subgroup or one of at least the Q rows
// of 4 subgroups, then per subgroup 16 rows of fp32 scores (32 + 4 floats) and, without a key
// split, of fp16 probabilities.
int64_t coopmat_shared_bytes(int64_t d, uint32_t subgroups, uint32_t key_split = 1) {
  const int64_t keys = coopmat_tile_keys(d), row = d / 8 + 1, key_row = keys / 8 + 1;
  const int64_t tiles = std::max(keys * row, d * key_row) + keys * row;
  const int64_t kv = key_split > 1 ? key_split * tiles : std::max(tiles, 4 * 16 * row);
  // With a key split the probabilities reuse each subgroup's K tile (one word declared).
  const int64_t probs = key_split > 1 ? 16 : int64_t{subgroups} * 16 * key_row * 16;
  return 16 * kv + int64_t{subgroups} * key_split * 16 * (std::max<int64_t>(keys, 32) + 4) * 4 +
         probs;
}

// Whether attention_coopmat.comp takes the problem: float16 storage on a device with 16x16x16
// fp16 cooperative matrices, subgroups of 32 and subgroup shuffles, head dim 64 or 128. The
// default since the one-pass form: on the H100 at 946caca (docs/bench/2026-12-07-session21.md,
// call A, bench-op attention 1 12 S D --fp16, GPU us) it beat the portable kernel at every
// length: D 64 S 128 23.0 vs 24.1, S 197 30.0 vs 39.4, S 512 39.4 vs 117.5, S 2048 309 vs
// 1267; D 128 35.1 vs 46.3 ... 621 vs 3042. VKGRAPH_TUNE=attention.coopmat=0 turns it off,
// =2 takes it from attention.coopmat_min_keys keys only.
bool coopmat_fits(ComputeGraph& g, const std::string& dtype, int64_t d, int64_t skv) {
  const vk::DeviceFeatures& f = g.context().features();
  if (dtype != "f16" || !f.coopmat_f16_16x16x16 || f.subgroup_size != 32 || !f.subgroup_shuffle ||
      (d != 64 && d != 128) ||
      coopmat_shared_bytes(d, 1) > g.context().limits().maxComputeSharedMemorySize)
    return false;
  const uint32_t mode = tuned(g, "attention.coopmat", 1);
  return mode == 1 || (mode == 2 && skv >= tuned(g, "attention.coopmat_min_keys", 384));
}

// Subgroups per workgroup of attention_coopmat.comp (16 query rows each, sharing the staged
// K and V tiles): the most of 4, 2, 1 that still give kCoopmatFillGroups workgroups and fit the
// device's shared memory, so that long sequences re-read K and V less and short ones still
// spread over the GPU. VKGRAPH_TUNE=attention.subgroups=N overrides, to measure.
uint32_t coopmat_subgroups(ComputeGraph& g, int64_t s, int64_t bh, int64_t d) {
  const uint32_t limit = g.context().limits().maxComputeSharedMemorySize;
  uint32_t n = 1;
  for (uint32_t wider : {2u, 4u})
    if (bh * ((s + 16 * wider - 1) / (16 * wider)) >= kCoopmatFillGroups &&
        coopmat_shared_bytes(d, wider) <= limit)
      n = wider;
  n = tuned(g, "attention.subgroups", n);
  check(n == 1 || n == 2 || n == 4, ErrorKind::InvalidArgument,
        std::string(kOp) + ": attention.subgroups must be 1, 2 or 4");
  check(coopmat_shared_bytes(d, n) <= limit, ErrorKind::Unsupported,
        std::string(kOp) + ": " + std::to_string(n) + " subgroups at head dim " +
            std::to_string(d) + " need more shared memory than the device's " +
            std::to_string(limit) + " bytes");
  return n;
}

// Subgroups of one workgroup of attention_coopmat.comp that split its keys, where the grid has
// one subgroup per workgroup: as many of 4, 3, 2 as give each at least one key tile and fit
// the device's shared memory (48 KiB: 4 at head dim 64, 3 at 128). A batch-1 grid of one-subgroup
// workgroups puts ~1 subgroup on each SM, which walks every key tile in turn. On an H100
// (docs/bench/2026-12-07-session23.md; bench-op attention 1 12 S D --fp16, GPU us, split 1 / 2 /
// 3 / 4): D 64 S 128 23.0 / 19.2 / 18.9 / 14.8, S 197 30.0 / 23.3 / 21.0 / 18.9; D 128 S 128
// 35.3 / 26.1 / 23.8, S 197 47.4 / 33.3 / 28.7; whole models, fp16 GPU ms, split 1 against the
// default: vit_b_16 1.465 -> 1.333, bert 1.165 -> 1.043, gpt2 1.507 -> 1.438, llama 1.407 ->
// 1.315. VKGRAPH_TUNE=attention.key_split=N overrides (1: no split), to measure.
uint32_t coopmat_key_split(ComputeGraph& g, uint32_t subgroups, int64_t skv, int64_t d) {
  const uint32_t limit = g.context().limits().maxComputeSharedMemorySize;
  const int64_t tiles = (skv + coopmat_tile_keys(d) - 1) / coopmat_tile_keys(d);
  uint32_t n = 1;
  if (subgroups == 1)
    for (uint32_t wider : {2u, 3u, 4u})
      if (tiles >= wider && coopmat_shared_bytes(d, 1, wider) <= limit) n = wider;
  n = tuned(g, "attention.key_split", n);
  check(
      n >= 1 && n <= 4 && (n == 1 || subgroups == 1), ErrorKind::InvalidArgument,
      std::string(kOp) + ": attention.key_split must be 1..4, and 1 with attention.subgroups > 1");
  check(coopmat_shared_bytes(d, subgroups, n) <= limit, ErrorKind::Unsupported,
        std::string(kOp) + ": " + std::to_string(n) + " key-splitting subgroups at head dim " +
            std::to_string(d) + " need more shared memory than the device's " +
            std::to_string(limit) + " bytes");
  return n;
}

// The result's shape and, for each dim of [B, H, S, D], its element stride there.
struct OutputLayout {
  Shape shape;
  std::array<int64_t, 4> strides{};
};

OutputLayout output_layout(size_t q_rank, const Shape& bhsd, const std::vector<int64_t>& perm) {
  OutputLayout l;
  if (perm.empty()) {
    l.shape = q_rank == 3 ? Shape(bhsd.begin() + 1, bhsd.end()) : bhsd;
    l.strides = {bhsd[1] * bhsd[2] * bhsd[3], bhsd[2] * bhsd[3], bhsd[3], 1};
    return l;
  }
  check(q_rank == 4, ErrorKind::InvalidArgument,
        std::string(kOp) + ": an output permutation needs rank-4 q");
  const std::vector<int64_t> p = resolve_perm(bhsd, perm, kOp);
  for (int64_t d : p) l.shape.push_back(bhsd[d]);
  int64_t stride = 1;
  for (size_t i = 4; i-- > 0;) {
    l.strides[p[i]] = stride;
    stride *= l.shape[i];
  }
  return l;
}

}  // namespace

StridedView strided_view(ComputeGraph& g, const PermutedView& view) {
  const Shape stored = g.info(view.tensor).shape;
  std::vector<int64_t> perm = view.perm;  // empty: as stored (resolve_perm would reverse)
  if (perm.empty())
    for (size_t i = 0; i < stored.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  perm = resolve_perm(stored, perm, kOp);
  std::vector<int64_t> row_major(stored.size(), 1);
  for (size_t i = stored.size(); i-- > 1;) row_major[i - 1] = row_major[i] * stored[i];
  StridedView s{view.tensor, {}, {}, 0};
  for (int64_t d : perm) {
    s.shape.push_back(stored[d]);
    s.strides.push_back(row_major[d]);
  }
  return s;
}

TensorRef attention(ComputeGraph& g, const PermutedView& q, const PermutedView& kt,
                    const PermutedView& v, std::optional<TensorRef> mask,
                    const AttentionParams& params) {
  return attention_strided(g, strided_view(g, q), strided_view(g, kt), strided_view(g, v), mask,
                           params);
}

TensorRef attention_strided(ComputeGraph& g, const StridedView& q, const StridedView& kt,
                            const StridedView& v, std::optional<TensorRef> mask,
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
  // attention.comp's flags: bit 0 causal, bit 1 zero_nan_rows.
  pc.add(params.scale).add(uint32_t{params.causal} | uint32_t{params.zero_nan_rows} << 1);
  // Where element (b, h, i, c) of [B, H, S, D] goes: the output's strides of those dims.
  const OutputLayout out_layout = output_layout(q.shape.size(), {B, H, S, D}, params.out_perm);
  for (int64_t st : out_layout.strides) pc.add(u32(st, "output stride"));
  for (const Strided* s : {&qs, &ks, &vs}) pc.add(u32(s->offset, "offset"));

  const bool coopmat = coopmat_fits(g, dtype, D, Skv);
  const uint32_t subgroups = coopmat ? coopmat_subgroups(g, S, B * H, D) : 0;
  const uint32_t key_split = coopmat ? coopmat_key_split(g, subgroups, Skv, D) : 0;
  const Tiling tile = coopmat ? Tiling{16 * subgroups, 32, 2} : tiling(g, D, S, B * H);
  const uint32_t br = tile.br;
  const int64_t row_blocks = (S + br - 1) / br;
  check(row_blocks <= 65535 && B * H <= 65535, ErrorKind::Unsupported,
        op + ": " + std::to_string(row_blocks) + " row blocks x " + std::to_string(B * H) +
            " heads exceed 65535 workgroups per dimension");
  u32(B * H * S * D, "output elements");
  TensorRef out = g.add_tensor(out_layout.shape, g.info(q.tensor).dtype);
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
  d.local = {coopmat ? 32 * subgroups * key_split : tile.br * tile.tpr, 1, 1};
  d.spec = coopmat ? std::vector<uint32_t>{subgroups, key_split}
                   : std::vector<uint32_t>{tile.br, tile.bc, tile.tpr, static_cast<uint32_t>(D)};
  d.push = pc.take();
  d.label = op;
  g.add_dispatch(std::move(d));
  return out;
}

}  // namespace vkgraph::ops
