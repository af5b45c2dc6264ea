#include "onnx/fuse_siblings.h"

#include <algorithm>

#include "core/shape_rules.h"
#include "onnx/fuse_view.h"
#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

struct Member {
  const NodeProto* mm;
  const NodeProto* bias = nullptr;  // the Add of a constant [N]
  int bias_input = -1;
  int64_t n = 0;
  const std::string& out() const { return (bias ? bias : mm)->output(0); }
};

// A MatMul of x by a float32 constant [K, N], with its bias Add if it has one, whose result is
// read in place.
std::optional<Member> member_of(Pass& p, const NodeProto& mm, const std::string& x, int64_t k) {
  const Importer& im = p.importer();
  if (mm.op_type() != "MatMul" || !mm.domain().empty() || mm.input_size() != 2 ||
      mm.input(0) != x || mm.input(1) == x || p.elided(mm.input(1)))
    return std::nullopt;
  const HostTensor* w = im.constant(mm, 1);
  if (!w || w->dtype != DType::Float32 || w->shape.size() != 2 || w->shape[0] != k)
    return std::nullopt;
  Member m{&mm, nullptr, -1, w->shape[1]};
  if (im.is_model_output(mm.output(0))) return std::nullopt;
  const NodeProto* add = p.sole_consumer(mm.output(0));
  if (add && add->op_type() == "Add" && add->domain().empty() && add->input_size() == 2) {
    const int other = add->input(0) == mm.output(0) ? 1 : 0;
    const HostTensor* b = im.constant(*add, other);
    if (b && b->dtype == DType::Float32 && b->shape == Shape{m.n}) {
      m.bias = add;
      m.bias_input = other;
    }
  }
  if (im.is_model_output(m.out()) || !read_in_place(im, m.out())) return std::nullopt;
  return m;
}

}  // namespace

bool read_in_place(const Importer& im, const std::string& value) {
  const auto& readers = im.consumers(value);
  if (readers.empty()) return false;
  for (const NodeProto* r : readers) {
    if (!is_view_op(r->op_type()) || !r->domain().empty() || r->input(0) != value ||
        std::count(r->input().begin(), r->input().end(), value) != 1)
      return false;
  }
  return true;
}

void elide_members(Pass& p, const std::string& packed_name, Shape packed,
                   const std::vector<std::pair<std::string, int64_t>>& members) {
  const std::vector<int64_t> strides = shapes::contiguous_strides(packed);
  int64_t offset = 0;
  for (const auto& [value, n] : members) {
    Shape shape = packed;
    shape.back() = n;
    p.elide(value, Pass::View{packed_name, {}, shape, offset, strides});
    offset += n;
  }
}

std::optional<Fusion> sibling_matmuls(const NodeProto& root, Pass& p) {
  const Importer& im = p.importer();
  if (p.knob("fuse.siblings", 1) == 0 || root.input_size() != 2 || root.input(0).empty() ||
      p.view(root.input(0)) || !im.available(root, 0) || im.constant(root, 0))
    return std::nullopt;
  const std::string& x = root.input(0);
  const Value& xv = im.input(root, 0);
  if (xv.dtype != DType::Float32 || xv.shape.size() < 2) return std::nullopt;
  const int64_t k = xv.shape.back();
  std::vector<Member> members;
  for (const NodeProto* r : im.consumers(x))
    if (auto m = member_of(p, *r, x, k)) members.push_back(*m);
  if (members.size() < 2 || members[0].mm != &root) return std::nullopt;
  const bool biased = members[0].bias != nullptr;
  for (const Member& m : members)
    if ((m.bias != nullptr) != biased) return std::nullopt;
  int64_t total = 0;
  for (const Member& m : members) total += m.n;
  Shape packed = xv.shape;
  packed.back() = total;
  NodeProto n = fused_node(root, "SiblingMatMul");
  n.add_input(x);
  for (const Member& m : members) n.add_input(m.mm->input(1));
  if (biased)
    for (const Member& m : members) n.add_input(m.bias->input(m.bias_input));
  const std::string out = root.output(0) + "/packed";
  n.add_output(out);
  set_attr(n, "members", static_cast<int64_t>(members.size()));
  Fusion f;
  std::vector<std::pair<std::string, int64_t>> outputs;
  for (const Member& m : members) {
    if (m.mm != &root) f.absorbed.push_back(m.mm);
    if (m.bias) f.absorbed.push_back(m.bias);
    outputs.emplace_back(m.out(), m.n);
  }
  elide_members(p, out, packed, outputs);
  f.node = std::move(n);
  return f;
}

}  // namespace vkgraph::onnx_import::fuse
