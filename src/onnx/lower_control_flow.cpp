// If, Loop and Scan. Their subgraphs are inlined into the one graph (Importer::inline_graph):
// If's chosen branch, and a Loop's or Scan's body once per iteration. A condition or trip count
// the graph computes is read back by the Session's segments (segments.h), which then build
// the rest for its value; see docs/notes/staged.md.
#include <algorithm>
#include <cstring>

#include "onnx/lower_util.h"
#include "vkgraph/ops.h"

namespace vkgraph::onnx_import {

namespace {
// Past this many iterations a Loop or Scan is not unrolled.
constexpr int64_t kMaxUnrolledIterations = 4096;

// The subgraph attribute `name`, read from the NodeProto (fold::Attrs holds no graphs), so it
// is declared read for the importer's attribute check through `attrs`.
const onnx::GraphProto& graph_attr(const Importer& im, const onnx::NodeProto& node,
                                   const fold::Attrs& attrs, const std::string& name) {
  attrs.ignore(name);
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.name() == name && a.has_g()) return a.g();
  throw Error(ErrorKind::ModelFormat, im.where(node) + ": has no graph attribute '" + name + "'");
}

int64_t scalar_int(const Importer& im, const onnx::NodeProto& node, const HostTensor& t,
                   const std::string& what) {
  if (t.numel() != 1)
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": " + what + " must hold one value, got " + shape_str(t.shape));
  if (t.dtype == DType::Int64) return t.data<int64_t>()[0];
  if (t.dtype == DType::Int32) return t.data<int32_t>()[0];
  throw Error(ErrorKind::ModelFormat,
              im.where(node) + ": " + what + " must be int64, got " + dtype_name(t.dtype));
}

bool scalar_bool(const Importer& im, const onnx::NodeProto& node, const HostTensor& t,
                 const std::string& what) {
  if (t.numel() != 1)
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": " + what + " must hold one value, got " + shape_str(t.shape));
  if (t.dtype != DType::Bool)
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": " + what + " must be bool, got " + dtype_name(t.dtype));
  return t.bytes[0] != 0;
}

// Element [index] of `v` along `axis`, with that axis removed.
Value take(Importer& im, Value v, const std::string& name, int64_t axis, int64_t index) {
  if (axis >= static_cast<int64_t>(v.shape.size()) || index >= v.shape[axis])
    throw Error(ErrorKind::ModelFormat, "'" + name + "' " + shape_str(v.shape) +
                                            " has no element " + std::to_string(index) +
                                            " along axis " + std::to_string(axis));
  Shape out = v.shape;
  out.erase(out.begin() + axis);
  if (v.constant) {
    const HostTensor& t = *v.constant;
    const size_t elem = dtype_size(t.dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= t.shape[d];
    for (size_t d = axis + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
    HostTensor r = HostTensor::uninitialized(t.dtype, out);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(r.bytes.data() + o * inner * elem,
                  t.bytes.data() + (o * t.shape[axis] + index) * inner * elem, inner * elem);
    return Importer::host_constant(std::move(r));
  }
  TensorRef x = im.tensor(v, name);
  TensorRef s = ops::slice(im.graph(), x, {index}, {index + 1}, {axis});
  Value r = Importer::device_value(im.graph(), ops::reshape(im.graph(), s, out));
  r.dtype = v.dtype;
  return r;
}

// The values stacked along a new axis `axis`.
Value stack(Importer& im, std::vector<Value> parts, const std::string& name, int64_t axis) {
  Shape one = parts.at(0).shape;
  one.insert(one.begin() + axis, 1);
  bool all_constant = axis == 0;
  for (const Value& p : parts) all_constant &= p.constant.has_value();
  if (all_constant) {
    Shape out = one;
    out[0] = static_cast<int64_t>(parts.size());
    HostTensor r = HostTensor::uninitialized(parts[0].dtype, out);
    size_t at = 0;
    for (const Value& p : parts) {
      std::memcpy(r.bytes.data() + at, p.constant->bytes.data(), p.constant->nbytes());
      at += p.constant->nbytes();
    }
    return Importer::host_constant(std::move(r));
  }
  std::vector<TensorRef> ts;
  for (Value& p : parts) ts.push_back(ops::reshape(im.graph(), im.tensor(p, name), one));
  Value r = Importer::device_value(im.graph(), ops::concat(im.graph(), ts, axis));
  r.dtype = parts[0].dtype;
  return r;
}

std::vector<Value> lower_if(Importer& im, const onnx::NodeProto& node, const fold::Attrs& attrs) {
  im.require_inputs(node, 1, 1);
  const onnx::GraphProto& then_branch = graph_attr(im, node, attrs, "then_branch");
  const onnx::GraphProto& else_branch = graph_attr(im, node, attrs, "else_branch");
  if (then_branch.output_size() != else_branch.output_size())
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": then_branch has " + std::to_string(then_branch.output_size()) +
                    " outputs and else_branch " + std::to_string(else_branch.output_size()) +
                    "; both must have one per output of the node");
  if (node.output_size() != then_branch.output_size())
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": has " + std::to_string(node.output_size()) +
                    " outputs, its branches " + std::to_string(then_branch.output_size()));
  // Both branches' captured values were checked when the node was visited; the one not taken
  // is never lowered.
  bool cond = scalar_bool(im, node, im.host_value(node, 0, "the condition"), "the condition");
  const onnx::GraphProto& branch = cond ? then_branch : else_branch;
  std::vector<Value> outs;
  for (const std::string& name : im.inline_graph(node, branch, im.scope_prefix(node), {}))
    outs.push_back(im.value(name));
  return outs;
}

std::vector<Value> lower_loop(Importer& im, const onnx::NodeProto& node, const fold::Attrs& attrs) {
  if (node.input_size() < 2)
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": has " + std::to_string(node.input_size()) +
                    " inputs; it needs M and cond (either may be empty) and the carried values");
  const onnx::GraphProto& body = graph_attr(im, node, attrs, "body");
  const bool has_trip_count = im.has_input(node, 0);
  const bool has_cond = im.has_input(node, 1);
  int64_t trip_count = 0;
  if (has_trip_count) {
    trip_count = scalar_int(im, node, im.host_value(node, 0, "the trip count M"), "trip count M");
    if (trip_count < 0)
      throw Error(ErrorKind::ModelFormat, im.where(node) + ": trip count M is " +
                                              std::to_string(trip_count) + "; it must be >= 0");
  }
  bool cond = true;
  if (has_cond)
    cond = scalar_bool(im, node, im.host_value(node, 1, "the initial condition"), "condition");
  if (!has_trip_count && !has_cond)
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": has neither a trip count nor a condition: it never ends");
  const size_t num_carried = static_cast<size_t>(node.input_size()) - 2;
  if (static_cast<size_t>(body.output_size()) < 1 + num_carried)
    throw Error(ErrorKind::ModelFormat, im.where(node) + ": body has " +
                                            std::to_string(body.output_size()) +
                                            " outputs; it needs the condition and " +
                                            std::to_string(num_carried) + " loop-carried values");
  const size_t num_scan = body.output_size() - 1 - num_carried;
  if (static_cast<size_t>(node.output_size()) > num_carried + num_scan)
    throw Error(ErrorKind::ModelFormat,
                im.where(node) + ": has " + std::to_string(node.output_size()) +
                    " outputs; its body gives " + std::to_string(num_carried + num_scan));
  std::vector<Value> carried;
  for (size_t i = 0; i < num_carried; ++i) carried.push_back(im.input(node, 2 + i));
  std::vector<std::vector<Value>> scans(num_scan);
  std::vector<std::string> scan_names(num_scan);
  for (int64_t i = 0; (!has_trip_count || i < trip_count) && cond; ++i) {
    if (i >= kMaxUnrolledIterations)
      throw Error(ErrorKind::Unsupported, im.where(node) + ": runs more than " +
                                              std::to_string(kMaxUnrolledIterations) +
                                              " iterations, more than vkgraph unrolls");
    std::vector<Value> inputs{
        Importer::host_constant(HostTensor::from(DType::Int64, {}, std::vector<int64_t>{i})),
        Importer::host_constant(HostTensor::from(DType::Bool, {}, std::vector<uint8_t>{1}))};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    std::vector<std::string> outs = im.inline_graph(node, body, im.scope_prefix(node), inputs);
    for (size_t k = 0; k < num_carried; ++k) carried[k] = im.value(outs[1 + k]);
    for (size_t k = 0; k < num_scan; ++k) {
      scans[k].push_back(im.value(outs[1 + num_carried + k]));
      scan_names[k] = outs[1 + num_carried + k];
    }
    // Without a condition input the body's condition is ignored (ONNX: a for loop).
    if (!has_cond || (has_trip_count && i + 1 >= trip_count)) continue;
    const Value& c = im.value(outs[0]);
    if (!c.constant)
      im.needs_host_value(node, outs[0], "the condition after iteration " + std::to_string(i));
    cond = scalar_bool(im, node, *c.constant, "the body's condition");
  }
  std::vector<Value> results = carried;
  for (size_t k = 0; k < num_scan; ++k) {
    if (scans[k].empty())
      throw Error(ErrorKind::Unsupported,
                  im.where(node) + ": runs no iteration, so its scan output " + std::to_string(k) +
                      " has no element whose shape it could take");
    results.push_back(stack(im, scans[k], scan_names[k], 0));
  }
  return results;
}

// One Scan over `scan_inputs`, axis by axis as the attributes say; returns the final states
// then the scan outputs.
std::vector<Value> scan(Importer& im, const onnx::NodeProto& node, const onnx::GraphProto& body,
                        std::vector<Value> states, const std::vector<Value>& scan_inputs,
                        const std::vector<std::string>& scan_names,
                        const std::vector<int64_t>& in_axes, const std::vector<int64_t>& in_dirs,
                        const std::vector<int64_t>& out_axes,
                        const std::vector<int64_t>& out_dirs) {
  int64_t length = -1;
  std::vector<int64_t> axes(scan_inputs.size());
  for (size_t j = 0; j < scan_inputs.size(); ++j) {
    const int64_t rank = static_cast<int64_t>(scan_inputs[j].shape.size());
    int64_t axis = j < in_axes.size() ? in_axes[j] : 0;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank)
      throw Error(ErrorKind::ModelFormat, im.where(node) + ": scan axis out of range for input " +
                                              shape_str(scan_inputs[j].shape));
    axes[j] = axis;
    if (length >= 0 && scan_inputs[j].shape[axis] != length)
      throw Error(ErrorKind::ModelFormat,
                  im.where(node) + ": scan inputs disagree in sequence length");
    length = scan_inputs[j].shape[axis];
  }
  if (length > kMaxUnrolledIterations)
    throw Error(ErrorKind::Unsupported, im.where(node) + ": scans " + std::to_string(length) +
                                            " steps, more than vkgraph unrolls (" +
                                            std::to_string(kMaxUnrolledIterations) + ")");
  const size_t num_states = states.size();
  if (static_cast<size_t>(body.output_size()) < num_states)
    throw Error(ErrorKind::ModelFormat, im.where(node) + ": body has fewer outputs than states");
  const size_t num_out = body.output_size() - num_states;
  std::vector<std::vector<Value>> outs(num_out);
  std::vector<std::string> out_names(num_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Value> inputs = states;
    for (size_t j = 0; j < scan_inputs.size(); ++j) {
      const bool reverse = j < in_dirs.size() && in_dirs[j] == 1;
      inputs.push_back(
          take(im, scan_inputs[j], scan_names[j], axes[j], reverse ? length - 1 - t : t));
    }
    std::vector<std::string> names = im.inline_graph(node, body, im.scope_prefix(node), inputs);
    for (size_t k = 0; k < num_states; ++k) states[k] = im.value(names[k]);
    for (size_t k = 0; k < num_out; ++k) {
      outs[k].push_back(im.value(names[num_states + k]));
      out_names[k] = names[num_states + k];
    }
  }
  std::vector<Value> results = states;
  for (size_t k = 0; k < num_out; ++k) {
    if (outs[k].empty())
      throw Error(ErrorKind::Unsupported,
                  im.where(node) + ": scans an empty sequence, so scan output " +
                      std::to_string(k) + " has no element whose shape it could take");
    if (k < out_dirs.size() && out_dirs[k] == 1) std::reverse(outs[k].begin(), outs[k].end());
    const int64_t rank = static_cast<int64_t>(outs[k][0].shape.size()) + 1;
    int64_t axis = k < out_axes.size() ? out_axes[k] : 0;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank)
      throw Error(ErrorKind::ModelFormat, im.where(node) + ": scan output axis out of range");
    results.push_back(stack(im, outs[k], out_names[k], axis));
  }
  return results;
}

std::vector<int64_t> ints_or(const fold::Attrs& attrs, const std::string& name) {
  const std::vector<int64_t>* v = attrs.find_ints(name);
  return v ? *v : std::vector<int64_t>{};
}

std::vector<Value> lower_scan(Importer& im, const onnx::NodeProto& node, const fold::Attrs& attrs) {
  const onnx::GraphProto& body = graph_attr(im, node, attrs, "body");
  auto it = attrs.ints.find("num_scan_inputs");
  if (it == attrs.ints.end())
    throw Error(ErrorKind::ModelFormat, im.where(node) + ": has no num_scan_inputs");
  const size_t num_scan = static_cast<size_t>(it->second);
  // Opset 8's Scan has an optional sequence_lens input first and a batch axis 0 on every input
  // and output; from opset 9 the body runs once per sequence element.
  const bool batched = im.opset() < 9;
  const size_t first = batched ? 1 : 0;
  const size_t n = static_cast<size_t>(node.input_size());
  if (n < first + num_scan || num_scan == 0)
    throw Error(ErrorKind::ModelFormat, im.where(node) + ": has " + std::to_string(n) +
                                            " inputs for " + std::to_string(num_scan) +
                                            " scan inputs");
  const size_t num_states = n - first - num_scan;
  std::vector<Value> states, inputs;
  std::vector<std::string> names;
  for (size_t i = first; i < n; ++i) {
    (i < first + num_states ? states : inputs).push_back(im.input(node, i));
    if (i >= first + num_states) names.push_back(node.input(i));
  }
  if (!batched)
    return scan(im, node, body, states, inputs, names, ints_or(attrs, "scan_input_axes"),
                ints_or(attrs, "scan_input_directions"), ints_or(attrs, "scan_output_axes"),
                ints_or(attrs, "scan_output_directions"));
  const int64_t batch = inputs[0].shape.empty() ? 0 : inputs[0].shape[0];
  if (im.has_input(node, 0)) {
    const HostTensor& lens = im.host_value(node, 0, "sequence_lens");
    const int64_t length = inputs[0].shape.size() > 1 ? inputs[0].shape[1] : -1;
    for (int64_t b = 0; b < lens.numel(); ++b) {
      int64_t len = lens.dtype == DType::Int64 ? lens.data<int64_t>()[b] : lens.data<int32_t>()[b];
      if (len != length)
        throw Error(ErrorKind::Unsupported,
                    im.where(node) + ": sequence_lens shorter than the sequence axis");
    }
  }
  const std::vector<int64_t> dirs = ints_or(attrs, "directions");
  std::vector<std::vector<Value>> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> s, x;
    for (size_t k = 0; k < states.size(); ++k)
      s.push_back(take(im, states[k], node.input(first + k), 0, b));
    for (size_t j = 0; j < inputs.size(); ++j) x.push_back(take(im, inputs[j], names[j], 0, b));
    per_batch.push_back(scan(im, node, body, s, x, names, {}, dirs, {}, {}));
  }
  if (per_batch.empty()) throw Error(ErrorKind::Unsupported, im.where(node) + ": batch of 0");
  std::vector<Value> results;
  for (size_t k = 0; k < per_batch[0].size(); ++k) {
    std::vector<Value> parts;
    for (auto& r : per_batch) parts.push_back(r[k]);
    results.push_back(stack(im, parts, node.name() + "/out" + std::to_string(k), 0));
  }
  return results;
}
}  // namespace

void register_control_flow(LoweringTable& table) {
  table["If"] = lower_if;
  table["Loop"] = lower_loop;
  table["Scan"] = lower_scan;
}

}  // namespace vkgraph::onnx_import
