#include "onnx/fuse_weight_only.h"

#include "onnx/importer.h"

namespace vkgraph::onnx_import::fuse {
namespace {

using onnx::NodeProto;

// Whether `dq` dequantizes a blocked low-bit constant weight [K, N] along K that
// ops::matmul_nbits can read. Reads the attributes it accepts.
bool weight_only_weight(const NodeProto& dq, Pass& p) {
  const Importer& im = p.importer();
  if (dq.op_type() != "DequantizeLinear" || !(dq.domain().empty() || dq.domain() == "ai.onnx") ||
      dq.input_size() < 2 || dq.output_size() != 1)
    return false;
  const fold::Attrs& a = p.attrs(dq);
  const int64_t block = a.get_int("block_size", 0);
  const int64_t out_type = a.get_int("output_dtype", 0);
  if (block < 16 || (block & (block - 1)) != 0 || a.get_int("axis", 1) != 0 ||
      (out_type != 0 && out_type != onnx::TensorProto::FLOAT))
    return false;
  const HostTensor* w = im.constant(dq, 0);
  const HostTensor* s = im.constant(dq, 1);
  if (!w || !s || w->shape.size() != 2 || !im.input(dq, 0).int8_type) return false;
  if (s->dtype != DType::Float32 && s->dtype != DType::Float16) return false;
  const int64_t k = w->shape[0], n = w->shape[1], blocks = (k + block - 1) / block;
  if (k == 0 || n == 0 || s->shape != Shape{blocks, n}) return false;
  if (im.has_input(dq, 2)) {
    const HostTensor* z = im.constant(dq, 2);
    if (!z || z->shape != s->shape || im.input(dq, 2).int8_type != im.input(dq, 0).int8_type ||
        im.input(dq, 2).four_bit != im.input(dq, 0).four_bit)
      return false;
  }
  return true;
}

// Whether `mm` is a MatMul reading `dq`'s weight as B (and not as x).
bool reads_as_weight(const NodeProto& mm, const NodeProto& dq) {
  return mm.op_type() == "MatMul" && (mm.domain().empty() || mm.domain() == "ai.onnx") &&
         mm.input_size() == 2 && mm.output_size() == 1 && mm.input(1) == dq.output(0) &&
         mm.input(0) != dq.output(0);
}

}  // namespace

std::optional<Fusion> weight_only_dequantize(const NodeProto& dq, Pass& p) {
  const Importer& im = p.importer();
  if (!weight_only_weight(dq, p) || im.is_model_output(dq.output(0))) return std::nullopt;
  const auto& readers = im.consumers(dq.output(0));
  if (readers.empty()) return std::nullopt;
  for (const NodeProto* r : readers)
    if (!reads_as_weight(*r, dq)) return std::nullopt;
  p.elide_dequantized(dq.output(0));
  return Fusion{};
}

std::optional<Fusion> weight_only_matmul(const NodeProto& root, Pass& p) {
  if (root.input_size() != 2 || !p.is_elided_dequantized(root.input(1))) return std::nullopt;
  const NodeProto* dq = p.importer().producer(root.input(1));
  // Elided by weight_only_dequantize (qdq_dequantize elides only unblocked ones).
  if (!dq || !weight_only_weight(*dq, p) || !reads_as_weight(root, *dq)) return std::nullopt;
  Fusion f;
  NodeProto n;
  n.set_name(root.name());
  n.set_op_type("WeightOnlyMatMul");
  n.set_domain(kDomain);
  n.add_input(root.input(0));
  for (int i = 0; i < 3; ++i) n.add_input(i < dq->input_size() ? dq->input(i) : std::string());
  n.add_output(root.output(0));
  set_attr(n, "block_size", p.attrs(*dq).get_int("block_size", 0));
  f.node = std::move(n);
  return f;
}

}  // namespace vkgraph::onnx_import::fuse
