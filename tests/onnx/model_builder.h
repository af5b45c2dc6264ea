#pragma once
// Small ONNX models built in memory for Session tests.
#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "gpu_test.h"
#include "vkgraph/ops/tuning.h"
#include "vkgraph/session.h"

namespace vkgraph::testing {

// A small ONNX model built in memory; dims of -1 become symbolic (dynamic) dimensions.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
    model_.mutable_graph()->set_name("test");  // ONNX's checker requires one
  }
  // Nodes of another domain (com.microsoft) need it imported.
  void import_domain(const std::string& domain, int version) {
    onnx::OperatorSetIdProto* op = model_.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  void input(const std::string& name, int elem_type, std::initializer_list<int64_t> dims) {
    describe(model_.mutable_graph()->add_input(), name, elem_type, dims);
  }
  // Outputs carry no shape: theirs follow from the inputs' values.
  void output(const std::string& name, int elem_type) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  }
  onnx::NodeProto& node(const std::string& op, std::initializer_list<std::string> inputs,
                        std::initializer_list<std::string> outputs) {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + std::to_string(model_.graph().node_size()));
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *n;
  }
  // A 1-D int64 initializer, or a scalar when `scalar` (then `values` holds one value).
  void initializer(const std::string& name, const std::vector<int64_t>& values,
                   bool scalar = false) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  // A float32 initializer of `shape`.
  void initializer(const std::string& name, const Shape& shape, const std::vector<float>& values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }  // for what the helpers lack
  onnx::ModelProto& proto() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }
  // An integer initializer of `elem_type` (INT8, UINT8, INT32: ONNX keeps all three in
  // int32_data), of `shape`.
  void int_initializer(const std::string& name, int elem_type, const Shape& shape,
                       const std::vector<int>& values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem_type);
    for (int64_t d : shape) t->add_dims(d);
    for (int v : values) t->add_int32_data(v);
  }
  // Any initializer, made by the caller (packed 4-bit data, raw_data, ...).
  void initializer(onnx::TensorProto t) {
    *model_.mutable_graph()->add_initializer() = std::move(t);
  }
  // A session on the shared validated context.
  Session session(SessionOptions options = {}) const {
    std::string bytes = model_.SerializeAsString();
    options.context = context();
    return Session(bytes.data(), bytes.size(), options);
  }

 private:
  static void describe(onnx::ValueInfoProto* v, const std::string& name, int elem_type,
                       std::initializer_list<int64_t> dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    int symbol = 0;
    for (int64_t d : dims) {
      if (d < 0)
        shape->add_dim()->set_dim_param(name + "_d" + std::to_string(symbol++));
      else
        shape->add_dim()->set_dim_value(d);
    }
  }
  onnx::ModelProto model_;
};

// Attributes for nodes made by ModelBuilder::node (or by hand).
inline void set_ints(onnx::NodeProto& node, const std::string& name, std::vector<int64_t> values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

inline void set_int(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// The Cast nodes float16 mode adds to a graph: one per float32 model input, cast on the device.
// Float32 outputs add none: they leave the device as float16 and are widened on the host.
inline size_t input_casts(bool fp16, size_t float_inputs) {
  return fp16 ? float_inputs : 0;
}

// A model run with the fusion pass and without it, on the same feeds: the outputs and the
// dispatch counts of both, for tests that check a fusion fires and changes nothing.
struct Runs {
  std::vector<HostTensor> fused, plain;
  size_t fused_nodes = 0, plain_nodes = 0;
};

inline Runs run_both(const ModelBuilder& m, const std::map<std::string, HostTensor>& feeds,
                     bool fp16 = false) {
  SessionOptions on, off;
  on.fp16 = off.fp16 = fp16;
  off.fuse = false;
  Session fused = m.session(on), plain = m.session(off);
  Runs r{fused.run(feeds), plain.run(feeds), 0, 0};
  r.fused_nodes = fused.graph()->stats().nodes;
  r.plain_nodes = plain.graph()->stats().nodes;
  return r;
}

// A quantized model run with the packed integer GEMM on or off (knob qgemm.packed) and a split-K
// count (qgemm.splits), profiled: the outputs, and per entry of `labels` how many dispatches'
// labels contain it (an epilogue's "+ byte table" against the separate "byte_table", say).
struct LabelledRun {
  std::vector<HostTensor> outputs;
  std::vector<int> counts;
};

inline LabelledRun run_packed(const ModelBuilder& m, const std::map<std::string, HostTensor>& feeds,
                              uint32_t packed, uint32_t splits,
                              const std::vector<std::string>& labels) {
  SessionOptions o;
  auto tuning = std::make_shared<ops::Tuning>();
  tuning->knobs["qgemm.packed"] = packed;
  tuning->knobs["qgemm.splits"] = splits;
  o.graph.tuning = tuning;
  o.graph.profile = true;
  Session s = m.session(o);
  LabelledRun r{s.run(feeds), std::vector<int>(labels.size(), 0)};
  for (const NodeTime& t : s.graph()->node_times())
    for (size_t i = 0; i < labels.size(); ++i)
      r.counts[i] += t.label.find(labels[i]) != std::string::npos;
  return r;
}

}  // namespace vkgraph::testing
