#include "onnx/load.h"

#include <climits>
#include <set>

#include "onnx/external_data.h"
#include "onnx/model_check.h"
#include "onnx/weights_in_place.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::onnx_import {

namespace {
ValueInfo describe(const onnx::ValueInfoProto& v, const std::string& what) {
  if (!v.type().has_tensor_type())
    throw Error(ErrorKind::Unsupported, what + ": value '" + v.name() + "' is not a tensor");
  const auto& tt = v.type().tensor_type();
  ValueInfo info{v.name(), {}, DType::Float32};
  if (tt.elem_type() != 0) info.dtype = onnx_io::dtype_from_onnx(tt.elem_type());
  info.onnx_type = tt.elem_type();
  for (auto& d : tt.shape().dim()) {
    const bool fixed = d.has_dim_value() && d.dim_value() >= 0;
    info.shape.push_back(fixed ? d.dim_value() : -1);
    info.dim_names.push_back(!fixed && d.has_dim_param() ? d.dim_param() : "");
  }
  return info;
}
}  // namespace

int ai_onnx_opset(const onnx::ModelProto& model) {
  if (model.opset_import_size() == 0) return 1;
  int opset = 0;
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = static_cast<int>(op.version());
  return opset;
}

ParsedModel parse_model(const void* bytes, size_t size, const std::string& what,
                        const std::string& external_data_dir,
                        std::shared_ptr<const void> bytes_owner) {
  if (size > static_cast<size_t>(INT32_MAX))
    throw Error(ErrorKind::Unsupported, what + ": models over 2 GiB are not supported");
  ParsedModel m;
  const auto* data = static_cast<const uint8_t*>(bytes);
  std::optional<ExcisedModel> excised;
  if (bytes_owner) excised = excise_initializer_data({data, size}, kInPlaceMinBytes);
  const bool parsed = excised ? m.proto.ParseFromString(excised->bytes)
                              : m.proto.ParseFromArray(bytes, static_cast<int>(size));
  if (!parsed)
    throw Error(ErrorKind::ModelFormat, what + ": not a valid ONNX model (protobuf parse failed)");
  if (!m.proto.has_graph()) throw Error(ErrorKind::ModelFormat, what + ": ONNX model has no graph");
  if (excised) {
    const int count = m.proto.graph().initializer_size();
    for (const Excision& e : excised->excisions) {
      // The parse of the cut bytes has every initializer the cut counted.
      check(e.initializer < count, ErrorKind::ModelFormat,
            what + ": initializer " + std::to_string(e.initializer) + " of a cut model is missing");
      // An external tensor's data comes from its file (load_external_data below).
      const auto& t = m.proto.graph().initializer(e.initializer);
      if (t.data_location() == onnx::TensorProto::EXTERNAL) continue;
      m.initializer_data[e.initializer] = {data + e.offset, e.size};
    }
    m.keep_alive.push_back(std::move(bytes_owner));
  }
  load_external_data(m, external_data_dir, what);
  check_with_onnx(m.proto, what);
  std::set<std::string> initializers;
  for (auto& init : m.proto.graph().initializer()) initializers.insert(init.name());
  for (auto& in : m.proto.graph().input()) {
    if (initializers.count(in.name())) continue;
    m.inputs.push_back(describe(in, what));
  }
  for (auto& out : m.proto.graph().output()) m.outputs.push_back(describe(out, what));
  if (m.outputs.empty()) throw Error(ErrorKind::ModelFormat, what + ": model has no outputs");
  return m;
}

std::optional<std::map<std::string, Shape>> static_input_shapes(
    const ParsedModel& model, const std::map<std::string, Shape>& overrides) {
  std::map<std::string, Shape> shapes;
  for (auto& in : model.inputs) {
    auto it = overrides.find(in.name);
    const Shape& s = it != overrides.end() ? it->second : in.shape;
    for (int64_t d : s)
      if (d < 0) return std::nullopt;
    shapes[in.name] = s;
  }
  return shapes;
}

}  // namespace vkgraph::onnx_import
