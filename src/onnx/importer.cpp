#include "onnx/importer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "onnx/load.h"
#include "onnx/model_check.h"
#include "onnx/subgraph.h"
#include "vkgraph/error.h"
#include "vkgraph/onnx_tensor.h"

namespace vkgraph::onnx_import {

Importer::Importer(const ParsedModel& parsed, ComputeGraph& graph,
                   const std::map<std::string, Shape>& input_shapes,
                   const std::map<std::string, HostTensor>& input_values, bool fuse, bool fp16,
                   IOMode io)
    : parsed_(parsed), model_(parsed.proto), graph_(graph), fuse_(fuse), fp16_(fp16), io_(io) {
  const onnx::ModelProto& model = model_;
  opset_ = ai_onnx_opset(model);
  // Opsets 7-17 are what the lowerings target; older models load too where an op's meaning
  // did not change (legacy attributes such as broadcast/axis are handled where they exist).
  // A model of other domains' ops only (ai.onnx.preview.training) imports no ai.onnx opset.
  const bool default_domain_nodes =
      std::any_of(model.graph().node().begin(), model.graph().node().end(),
                  [](const auto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; });
  if ((opset_ < 1 && default_domain_nodes) || opset_ > 21)
    throw Error(ErrorKind::Unsupported,
                "model uses ai.onnx opset " + std::to_string(opset_) + "; supported: 1 to 21");
  register_einsum(lowerings_);
  register_elementwise(lowerings_);
  register_nn(lowerings_);
  register_attention(lowerings_);
  register_tensor(lowerings_);
  register_loss(lowerings_);
  register_grid_sample(lowerings_);
  register_linalg(lowerings_);
  register_local_norm(lowerings_);
  register_signal(lowerings_);
  register_nd_index(lowerings_);
  register_one_hot(lowerings_);
  register_pointwise(lowerings_);
  register_data_dependent(lowerings_);
  register_bitwise(lowerings_);
  register_training(lowerings_);
  register_text(lowerings_);
  register_quant(lowerings_);
  register_control_flow(lowerings_);
  register_recurrent(lowerings_);
  add_inputs(input_shapes, input_values);
}

std::optional<DType> int8_type_of(int32_t onnx_type) {
  if (onnx_type == onnx::TensorProto::INT8 || onnx_type == onnx_io::kOnnxInt4) return DType::Int8;
  if (onnx_type == onnx::TensorProto::UINT8 || onnx_type == onnx_io::kOnnxUInt4)
    return DType::UInt8;
  return std::nullopt;
}

void set_quantized_type(Value& v, int32_t onnx_type) {
  v.int8_type = int8_type_of(onnx_type);
  v.four_bit = onnx_io::is_4bit_onnx_type(onnx_type);
}

Value Importer::device_value(ComputeGraph& g, TensorRef t) {
  TensorInfo ti = g.info(t);
  Value v;
  v.tensor = t;
  v.shape = ti.shape;
  v.dtype = ti.dtype;
  return v;
}

void Importer::add_inputs(const std::map<std::string, Shape>& input_shapes,
                          const std::map<std::string, HostTensor>& input_values) {
  const onnx::GraphProto& g = model_.graph();
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto& init = g.initializer(i);
    if (init.name().empty()) throw Error(ErrorKind::ModelFormat, "initializer without a name");
    Value v;
    v.constant = HostConstant::of_initializer(init, parsed_.raw_data_of(i));
    v.shape = v.constant.shape();
    v.dtype = v.constant.dtype();
    set_quantized_type(v, init.data_type());
    values_[init.name()] = std::move(v);
  }
  for (auto& in : g.input()) {
    if (values_.count(in.name())) continue;  // an initializer listed as input (IR < 4)
    auto it = input_shapes.find(in.name());
    if (it == input_shapes.end())
      throw Error(ErrorKind::InvalidArgument, "no shape for model input '" + in.name() + "'");
    if (!in.type().has_tensor_type())
      throw Error(ErrorKind::Unsupported, "model input '" + in.name() + "' is not a tensor");
    DType dtype = onnx_io::dtype_from_onnx(in.type().tensor_type().elem_type());
    Value v = device_value(graph_, graph_.add_input(it->second, dtype, in.name(), io_));
    set_quantized_type(v, in.type().tensor_type().elem_type());
    if (auto vt = input_values.find(in.name()); vt != input_values.end()) {
      if (vt->second.dtype != dtype || vt->second.shape != v.shape)
        throw Error(ErrorKind::InvalidArgument, "value for model input '" + in.name() + "' is " +
                                                    dtype_name(vt->second.dtype) + " " +
                                                    shape_str(vt->second.shape) + ", expected " +
                                                    dtype_name(dtype) + " " + shape_str(v.shape));
      v.constant = vt->second;
    } else {
      v.sources = {in.name()};
    }
    values_[in.name()] = std::move(v);
  }
  for (auto& out : g.output()) graph_outputs_.insert(out.name());
  for (auto& node : g.node()) {
    // Checked up front: fusion reads the outputs of nodes it has not visited yet.
    if (node.output_size() == 0)
      throw Error(ErrorKind::ModelFormat, where(node) + ": has no output");
    register_node(node);
    model_values_.insert(node.output().begin(), node.output().end());
  }
}

void Importer::register_node(const onnx::NodeProto& node) {
  // A subgraph's captured values are read by its node: fusion and the staged builds' liveness
  // must see those reads as the node's.
  std::set<std::string> captured;
  for (const onnx::GraphProto* sub : subgraphs_of(node))
    for (const std::string& name : captured_names(*sub)) captured.insert(name);
  if (!captured.empty()) captured_[&node].assign(captured.begin(), captured.end());
  for (const std::string& name : uses(node)) consumers_[name].push_back(&node);
  for (auto& name : node.output())
    if (!name.empty()) producers_[name] = &node;
}

std::vector<std::string> Importer::uses(const onnx::NodeProto& node) const {
  std::vector<std::string> names;
  for (auto& name : node.input())
    if (!name.empty()) names.push_back(name);
  if (auto it = captured_.find(&node); it != captured_.end())
    names.insert(names.end(), it->second.begin(), it->second.end());
  return names;
}

namespace {
std::string quoted_list(const std::set<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
  return list;
}
}  // namespace

void Importer::set_staging(Staging staging) {
  staging_ = std::move(staging);
  // A segment that computes values for a later one is small and short-lived: unfused, so that
  // no fusion absorbs the node whose output it reads back.
  if (!staging_.targets.empty()) fuse_ = false;
}

bool is_constant_node(const onnx::NodeProto& node) {
  return node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx");
}

Value Importer::host_constant(HostTensor t) {
  Value v;
  v.shape = t.shape;
  v.dtype = t.dtype;
  v.constant = std::move(t);
  return v;
}

std::set<const onnx::NodeProto*> Importer::live_nodes() const {
  std::set<const onnx::NodeProto*> live;
  std::vector<std::string> work;
  if (staging_.targets.empty())
    work.assign(graph_outputs_.begin(), graph_outputs_.end());
  else
    work.assign(staging_.roots.begin(), staging_.roots.end());
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    if (staging_.computed.count(name)) continue;  // read back by an earlier segment
    const onnx::NodeProto* p = producer(name);
    if (!p || !live.insert(p).second) continue;
    for (const std::string& in : uses(*p)) work.push_back(in);
  }
  return live;
}

void Importer::build() {
  const onnx::GraphProto& g = model_.graph();
  // A staged build visits only the nodes its outputs need: an earlier segment computed the
  // rest, or a later one will.
  std::set<const onnx::NodeProto*> live;
  if (staging_.active()) live = live_nodes();
  for (auto& [name, value] : staging_.computed) {
    if (!model_values_.count(name)) continue;  // made by an inlining, which binds it then
    values_[name] = host_constant(value);
  }
  auto wanted = [&](const onnx::NodeProto& node) {
    return !staging_.active() || live.count(&node) > 0;
  };
  // Constants first: fusion looks ahead at a consumer's inputs (Clip's bounds, an Add's bias)
  // that exporters often emit as Constant nodes placed after the producer.
  for (auto& node : g.node())
    if (is_constant_node(node) && wanted(node)) visit_top(node);
  for (auto& node : g.node())
    if (!is_constant_node(node) && wanted(node)) visit_top(node);
  node_half_ = false;  // outputs are float32 whatever precision computed them
  if (!needed_.empty())
    throw NeedsInputValues(
        first_need_ + "; the model needs the values of inputs " + quoted_list(needed_), needed_);
  if (!staging_.targets.empty()) {
    bool all = true;
    for (const std::string& name : staging_.targets) all &= values_.count(name) > 0;
    if (all) {
      for (const std::string& name : staging_.targets)
        graph_.add_output(tensor(values_.at(name), name), name);
      return;
    }
  }
  if (!computed_needed_.empty())
    throw NeedsComputedValues(first_computed_need_, computed_needed_, computed_roots_);
  for (auto& out : g.output()) {
    auto it = values_.find(out.name());
    if (it == values_.end())
      throw Error(ErrorKind::ModelFormat, "model output '" + out.name() + "' is never computed");
    Value& v = it->second;
    // Not for a segment's graph (targets set): segments read their outputs as they are.
    if (io_ == IOMode::Staged && staging_.targets.empty() && v.dtype == DType::Float32 &&
        !v.constant && v.tensor.valid() && graph_.info(v.tensor).dtype == DType::Float16) {
      // A float32 output computed in float16 leaves the device as float16 and is widened on
      // the host as it is read (Session::run): half the bytes over the bus and out of staging
      // memory, and no cast node. The values are the same as the cast's.
      graph_.add_output(v.tensor, out.name());
      widened_outputs_.insert(out.name());
      continue;
    }
    TensorRef t = tensor(v, out.name());
    if (io_ == IOMode::External) {
      // add_output refuses External, before changing anything, for what the graph does not
      // compute into storage of its own: a constant, an input, storage another output owns.
      try {
        graph_.add_output(t, out.name(), IOMode::External);
        external_outputs_.insert(out.name());
        continue;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::InvalidArgument) throw;
      }
    }
    graph_.add_output(t, out.name());
  }
}

bool Importer::try_fold(const onnx::NodeProto& node, const fold::Attrs& attrs) {
  const std::string& op = node.op_type();
  if (!fold::can_fold(op)) return false;
  // Every input known first: reading a constant reads it from the model's proto, which a
  // weight only uploaded (Gather's table, MatMul's bias) never needs.
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty() && !input(node, i).constant &&
        !((op == "Shape" || op == "Size") && i == 0))
      return false;
  std::vector<const HostTensor*> inputs;
  std::vector<HostTensor> placeholders;  // Shape/Size need only the shape
  placeholders.reserve(node.input_size());
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    const Value& v = input(node, i);
    if (v.constant) {
      inputs.push_back(&*v.constant);
    } else if ((op == "Shape" || op == "Size") && i == 0) {
      HostTensor p;
      p.dtype = v.dtype;
      p.shape = v.shape;
      placeholders.push_back(std::move(p));
      inputs.push_back(&placeholders.back());
    } else {
      return false;
    }
  }
  std::vector<HostTensor> results;
  try {
    results = fold::evaluate(op, attrs, inputs, opset_);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unsupported) return false;  // the device will compute it
    throw Error(e.kind(), where(node) + ": " + e.message());
  }
  for (size_t i = 0; i < results.size() && i < static_cast<size_t>(node.output_size()); ++i) {
    Value v;
    v.shape = results[i].shape;
    v.dtype = results[i].dtype;
    v.constant = std::move(results[i]);
    values_[node.output(i)] = std::move(v);
  }
  return true;
}

void Importer::visit_top(const onnx::NodeProto& node) {
  top_node_ = &node;
  visit(node);
  top_node_ = nullptr;
}

bool Importer::take_computed(const onnx::NodeProto& node) {
  if (staging_.computed.empty()) return false;
  for (const std::string& name : node.output())
    if (!name.empty() && !staging_.computed.count(name)) return false;
  for (const std::string& name : node.output())
    if (!name.empty()) values_[name] = host_constant(staging_.computed.at(name));
  return true;
}

void Importer::visit(const onnx::NodeProto& node) {
  visit_node(node);
  // Outputs an earlier segment read back fold like constants, whatever computed them here.
  if (staging_.computed.empty()) return;
  for (const std::string& name : node.output()) {
    auto it = staging_.computed.find(name);
    auto v = values_.find(name);
    if (it == staging_.computed.end() || v == values_.end()) continue;
    v->second.constant = it->second;
    v->second.sources.clear();
  }
}

void Importer::visit_node(const onnx::NodeProto& node) {
  if (folded_ahead_.count(&node)) return;
  // An absorbed node's output may be a view of the fused node's (fuse_siblings.h).
  if (absorbed_.count(&node)) return add_views(node);
  if (take_computed(node)) return;
  for (const std::string& name : uses(node))
    if (blocked_.count(name)) return block(node);
  // Other domains' ops (com.microsoft) run where they have a lowering; the fusion pass's own
  // domain is never the model's to use.
  if (!node.domain().empty() && node.domain() != "ai.onnx" &&
      (fuse::is_fused(node) || !lowerings_.count(fuse::lowering_key(node))))
    throw Error(ErrorKind::Unsupported,
                where(node) + ": operator domain '" + node.domain() + "' is not supported");
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty() && !values_.count(node.input(i)) && !fusion_.elided(node.input(i)))
      throw Error(ErrorKind::ModelFormat, where(node) + ": input '" + node.input(i) +
                                              "' is not produced by any earlier node");
  if (auto it = captured_.find(&node); it != captured_.end())
    for (const std::string& name : it->second)
      if (!values_.count(name))
        throw Error(ErrorKind::ModelFormat,
                    where(node) + ": a subgraph reads '" + name +
                        "', which neither it nor an enclosing scope defines before this node");
  fold::Attrs attrs;
  try {
    attrs = fold::attrs_from_node(node);
  } catch (const Error& e) {
    throw Error(e.kind(), where(node) + ": " + e.message());
  }
  if (node.op_type() == "Constant") {
    const HostTensor* t = attrs.find_tensor("value");
    if (!t) {
      if (auto it = attrs.floats.find("value_float"); it != attrs.floats.end())
        values_[node.output(0)].constant =
            HostTensor::from(DType::Float32, {}, std::vector<float>{it->second});
      else if (auto jt = attrs.ints.find("value_int"); jt != attrs.ints.end())
        values_[node.output(0)].constant =
            HostTensor::from(DType::Int64, {}, std::vector<int64_t>{jt->second});
      else if (auto* l = attrs.find_ints("value_ints"))
        values_[node.output(0)].constant =
            HostTensor::from(DType::Int64, {static_cast<int64_t>(l->size())}, *l);
      else if (auto ft = attrs.float_lists.find("value_floats"); ft != attrs.float_lists.end())
        values_[node.output(0)].constant =
            HostTensor::from(DType::Float32, {static_cast<int64_t>(ft->second.size())}, ft->second);
      else
        fail(node, "Constant without a supported value attribute");
    } else {
      values_[node.output(0)].constant = *t;
    }
    Value& v = values_[node.output(0)];
    v.shape = v.constant->shape;
    v.dtype = v.constant->dtype;
    for (auto& attr : node.attribute())
      if (attr.name() == "value" && attr.has_t()) set_quantized_type(v, attr.t().data_type());
    check_attributes_read(node, attrs);
    return;
  }
  std::optional<fuse::Fusion> fusion;
  try {
    if (fuse_) fusion = fusion_.rewrite(node);
    if (fusion && !fusion->node) return add_views(node);  // elided: a view, or a dequantize
    if (!fusion && try_fold(node, attrs)) return check_attributes_read(node, attrs);
    attrs.forget_reads();  // a folder that declined does not speak for the lowering
    if (!fusion) return lower(node, attrs, false);
    absorbed_.insert(fusion->absorbed.begin(), fusion->absorbed.end());
    lower(*fusion->node, fold::attrs_from_node(*fusion->node), !fusion->absorbed.empty());
    add_views(node);  // root's outputs that are views of the fused node's (fuse_siblings.h)
  } catch (const NeedsInputValues& e) {
    graph_.set_label_scope("");
    if (needed_.empty()) first_need_ = e.message();
    needed_.insert(e.inputs().begin(), e.inputs().end());
    block(node);
    if (fusion)
      for (const onnx::NodeProto* c : fusion->absorbed) block(*c);
  } catch (const NeedsComputedValues& e) {
    graph_.set_label_scope("");
    if (computed_needed_.empty()) first_computed_need_ = e.message();
    computed_needed_.insert(e.values().begin(), e.values().end());
    // A value an inlined subgraph made comes from the model node that owns the subgraph.
    for (const std::string& name : e.values())
      if (model_values_.count(name))
        computed_roots_.insert(name);
      else if (top_node_)
        for (const std::string& out : top_node_->output())
          if (!out.empty()) computed_roots_.insert(out);
    block(node);
    if (fusion)
      for (const onnx::NodeProto* c : fusion->absorbed) block(*c);
  } catch (const SubgraphBlocked&) {
    graph_.set_label_scope("");
    block(node);
  }
}

bool Importer::fold_ahead(const std::string& value) {
  if (auto it = values_.find(value); it != values_.end()) return it->second.constant.has_value();
  // A staged build takes some values from an earlier segment in model order: left alone.
  if (!staging_.computed.empty() || blocked_.count(value) || fusion_.elided(value)) return false;
  const onnx::NodeProto* p = producer(value);
  if (!p || absorbed_.count(p) || captured_.count(p) || !p->domain().empty()) return false;
  if (p->op_type() != "Constant" && !fold::can_fold(p->op_type())) return false;
  for (const std::string& in : p->input())
    if (!in.empty() && !values_.count(in) && !fold_ahead(in)) return false;
  if (p->op_type() == "Constant") {
    visit_node(*p);
  } else {
    fold::Attrs attrs = fold::attrs_from_node(*p);
    if (!try_fold(*p, attrs)) return false;
    check_attributes_read(*p, attrs);
  }
  folded_ahead_.insert(p);
  auto it = values_.find(value);
  return it != values_.end() && it->second.constant.has_value();
}

bool Importer::on_device(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && (it->second.tensor.valid() || fusion_.view(name));
}

void Importer::add_views(const onnx::NodeProto& node) {
  for (const std::string& name : node.output()) {
    const fuse::Pass::View* view = fusion_.view(name);
    if (!view) continue;
    // Known by its shape (Shape folds it) but not stored: tensor() copies it out on demand.
    const Value& source = values_.at(view->source);
    Value& v = values_[name];
    v.shape = view->shape;
    v.dtype = source.dtype;
    v.int8_type = source.int8_type;
    v.four_bit = source.four_bit;
    v.sources = source.sources;
  }
}

void Importer::block(const onnx::NodeProto& node) {
  blocked_.insert(node.output().begin(), node.output().end());
}

void Importer::lower(const onnx::NodeProto& node, const fold::Attrs& attrs, bool absorbed_others) {
  std::set<std::string> sources = fold_sources(node);
  auto it = lowerings_.find(fuse::lowering_key(node));
  if (it == lowerings_.end()) {
    // Host-only ops (Range, ConstantOfShape, NonZero) run once their inputs' values are known:
    // given by model inputs, or read back where the graph computes them.
    if (!sources.empty()) needs_values(node, "its result", sources);
    if (fold::can_fold(node.op_type())) {
      std::set<std::string> computed;
      for (const std::string& name : node.input())
        if (!name.empty() && !values_.at(name).constant && on_device(name)) computed.insert(name);
      if (!computed.empty())
        throw NeedsComputedValues(where(node) + ": runs on the host, and its inputs " +
                                      quoted_list(computed) + " are computed by the model",
                                  computed);
    }
    throw Error(ErrorKind::Unsupported, "unsupported operator " + where(node));
  }
  const std::string& op_type = fuse::model_op_type(node);
  graph_.set_label_scope(op_type + " '" + node.name() + "'");
  node_half_ = fp16_ && it->second.half;
  node_demoted_ = false;
  // An elided view has no tensor until a reader needs one: stored now for any node lowered,
  // since a lowering may pass its input's Value on (Identity) rather than ask for the tensor.
  for (const std::string& name : node.input())
    if (!name.empty() && fusion_.view(name)) tensor(values_.at(name), name);
  std::vector<Value> outs = it->second.lower(*this, node, attrs);
  graph_.set_label_scope("");
  check_attributes_read(node, attrs);
  if (outs.empty()) fail(node, "lowering produced no output");
  // Float16 results of float32 operands are float32 values held in float16.
  if (node_demoted_)
    for (Value& v : outs)
      if (v.dtype == DType::Float16 && !v.constant) v.dtype = DType::Float32;
  node_half_ = false;
  // What a fused node computes beyond its first node (an activation, ...) is not folded on the
  // host.
  for (Value& v : outs)
    v.sources = v.constant || absorbed_others ? std::set<std::string>{} : sources;
  for (size_t i = 0; i < outs.size() && i < static_cast<size_t>(node.output_size()); ++i)
    if (!node.output(i).empty()) values_[node.output(i)] = std::move(outs[i]);
}

void Importer::check_attributes_read(const onnx::NodeProto& node, const fold::Attrs& attrs) const {
  std::vector<std::string> unread = attrs.unread();
  if (!unread.empty())
    throw unread_attribute(where(node), fuse::model_op_type(node), node, opset_, unread.front());
}

size_t Importer::num_inputs(const onnx::NodeProto& node) const {
  size_t n = node.input_size();
  while (n > 0 && node.input(n - 1).empty()) --n;
  return n;
}

bool Importer::has_input(const onnx::NodeProto& node, size_t i) const {
  return i < static_cast<size_t>(node.input_size()) && !node.input(i).empty();
}

bool Importer::available(const onnx::NodeProto& node, size_t i) const {
  return has_input(node, i) && computed(node.input(i)) != nullptr;
}

const Value* Importer::computed(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

const Value& Importer::input(const onnx::NodeProto& node, size_t i) const {
  if (!has_input(node, i)) fail(node, "missing input " + std::to_string(i));
  return values_.at(node.input(i));
}

TensorRef Importer::tensor(Value& v, const std::string& name) {
  const bool demote = node_half_ && v.dtype == DType::Float32;
  const DType want = demote ? DType::Float16 : v.dtype;
  // A view the fusion pass elided, read by a node that takes no strides: copied out once, in
  // the precision of the first reader (its source's tensor() decides, as for this value).
  if (!v.tensor.valid() && !v.constant)
    if (const fuse::Pass::View* view = fusion_.view(name)) {
      TensorRef source = tensor(values_.at(view->source), view->source);
      if (view->group == 1) {
        v.tensor = ops::as_strided(graph_, source, view->shape, view->strides, view->offset);
      } else {  // grouped heads: the repeat as a dim of stride 0 after the stored one
        Shape shape = view->shape;
        std::vector<int64_t> strides = view->strides;
        const auto at = static_cast<std::ptrdiff_t>(view->group_dim);
        shape[at] /= view->group;
        shape.insert(shape.begin() + at + 1, view->group);
        strides.insert(strides.begin() + at + 1, 0);
        v.tensor = ops::reshape(
            graph_, ops::as_strided(graph_, source, shape, strides, view->offset), view->shape);
      }
    }
  node_demoted_ |= demote;
  for (TensorRef t : {v.tensor, v.other})
    if (t.valid() && graph_.info(t).dtype == want) return t;
  TensorRef made = v.constant
                       ? graph_.add_constant(demote ? v.constant.half() : v.constant.copy(), name)
                       : ops::cast(graph_, v.tensor, want);
  (v.tensor.valid() ? v.other : v.tensor) = made;
  return made;
}

TensorRef Importer::constant_tensor(HostTensor value, const std::string& name) {
  // Not a demotion of a model value: a natively float16 node stays float16.
  if (node_half_ && value.dtype == DType::Float32) value = half_of(value);
  return graph_.add_constant(std::move(value), name);
}

TensorRef Importer::tensor(const onnx::NodeProto& node, size_t i) {
  input(node, i);
  return tensor(values_.at(node.input(i)), node.input(i));
}

TensorRef Importer::float32_tensor(const onnx::NodeProto& node, size_t i) {
  const bool half = std::exchange(node_half_, false);
  const TensorRef t = tensor(node, i);
  node_half_ = half;
  return t;
}

void Importer::keep_other(const onnx::NodeProto& node, size_t i, TensorRef t) {
  Value& v = values_.at(node.input(i));
  if (v.tensor.valid() && !v.other.valid()) v.other = t;
}

const HostTensor* Importer::constant(const onnx::NodeProto& node, size_t i) const {
  if (!has_input(node, i)) return nullptr;
  // Fusion looks at nodes not visited yet, whose inputs may not exist yet: not a constant.
  auto it = values_.find(node.input(i));
  return it != values_.end() && it->second.constant ? &*it->second.constant : nullptr;
}

const HostTensor& Importer::host_value(const onnx::NodeProto& node, size_t i,
                                       const std::string& what) const {
  const Value& v = input(node, i);
  if (v.constant) return *v.constant;
  if (!v.sources.empty()) needs_values(node, what, v.sources);
  needs_host_value(node, node.input(i), what);
}

void Importer::needs_host_value(const onnx::NodeProto& node, const std::string& name,
                                const std::string& what) const {
  const Value& v = value(name);
  if (!v.sources.empty()) needs_values(node, what, v.sources);
  if (!on_device(name)) fail(node, what + " must be known at load time");
  throw NeedsComputedValues(where(node) + ": " + what + " depends on '" + name +
                                "', which the model computes: the Session runs the model in "
                                "segments and reads it back",
                            {name});
}

std::set<std::string> Importer::fold_sources(const onnx::NodeProto& node) const {
  if (!fold::can_fold(node.op_type())) return {};
  std::set<std::string> sources;
  for (const std::string& name : node.input()) {
    if (name.empty()) continue;
    const Value& v = values_.at(name);
    if (v.constant) continue;
    if (v.sources.empty()) return {};
    sources.insert(v.sources.begin(), v.sources.end());
  }
  return sources;
}

void Importer::needs_values(const onnx::NodeProto& node, const std::string& what,
                            const std::set<std::string>& inputs) const {
  throw NeedsInputValues(
      where(node) + ": " + what + " depends on the value of model input " + quoted_list(inputs),
      inputs);
}

void Importer::require_host_values(const onnx::NodeProto& node,
                                   std::initializer_list<size_t> inputs) const {
  std::set<std::string> sources, computed;
  for (size_t i : inputs) {
    if (!has_input(node, i) || input(node, i).constant) continue;
    const std::set<std::string>& s = input(node, i).sources;
    sources.insert(s.begin(), s.end());
    if (s.empty() && on_device(node.input(i))) computed.insert(node.input(i));
  }
  if (!sources.empty()) needs_values(node, "its shape", sources);
  if (!computed.empty())
    throw NeedsComputedValues(where(node) + ": its shape depends on " + quoted_list(computed) +
                                  ", which the model computes",
                              computed);
}

int32_t Importer::declared_elem_type(const std::string& value) const {
  const onnx::GraphProto& g = model_.graph();
  for (const auto* infos : {&g.input(), &g.output(), &g.value_info()})
    for (const onnx::ValueInfoProto& v : *infos)
      if (v.name() == value && v.type().has_tensor_type())
        return v.type().tensor_type().elem_type();
  for (const onnx::TensorProto& t : g.initializer())
    if (t.name() == value) return t.data_type();
  return 0;
}

// A fused node is named after the model's node it replaced, and reported as that node.
std::string Importer::where(const onnx::NodeProto& node) const {
  return fuse::model_op_type(node) + " node '" + node.name() + "' (opset " +
         std::to_string(opset_) + ")";
}

void Importer::fail(const onnx::NodeProto& node, const std::string& problem) const {
  throw Error(ErrorKind::Unsupported, where(node) + ": " + problem);
}

void Importer::require_inputs(const onnx::NodeProto& node, size_t min, size_t max) const {
  size_t n = num_inputs(node);
  if (n < min || n > max)
    throw Error(ErrorKind::ModelFormat, where(node) + ": has " + std::to_string(n) +
                                            " inputs, expected " + std::to_string(min) +
                                            (max != min ? " to " + std::to_string(max) : ""));
  for (size_t i = 0; i < min; ++i)
    if (!has_input(node, i))
      throw Error(ErrorKind::ModelFormat,
                  where(node) + ": required input " + std::to_string(i) + " is empty");
}

const std::vector<const onnx::NodeProto*>& Importer::consumers(const std::string& value) const {
  static const std::vector<const onnx::NodeProto*> none;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? none : it->second;
}

const onnx::NodeProto* Importer::producer(const std::string& value) const {
  auto it = producers_.find(value);
  return it == producers_.end() ? nullptr : it->second;
}

}  // namespace vkgraph::onnx_import
