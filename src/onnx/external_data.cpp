#include "onnx/external_data.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "onnx/weights_in_place.h"
#include "vkgraph/error.h"
#include "vkgraph/file_io.h"

namespace vkgraph::onnx_import {

namespace fs = std::filesystem;
using TP = onnx::TensorProto;

namespace {

bool is_external(const TP& t) {
  return t.data_location() == TP::EXTERNAL;
}

// Calls `f` on every TensorProto of the graph that may carry data: initializers (with their
// index, in the main graph only; -1 elsewhere) and tensor attributes of nodes, in subgraphs too.
void for_each_tensor(onnx::GraphProto& g, const std::function<void(TP&, int)>& f, bool main_graph) {
  int index = 0;
  for (TP& t : *g.mutable_initializer()) f(t, main_graph ? index++ : -1);
  for (onnx::NodeProto& n : *g.mutable_node())
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_t()) f(*a.mutable_t(), -1);
      for (TP& t : *a.mutable_tensors()) f(t, -1);
      if (a.has_g()) for_each_tensor(*a.mutable_g(), f, false);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) for_each_tensor(sub, f, false);
    }
}

// Bytes per element of the types ONNX stores raw; 0 for the others (strings).
size_t element_bytes(int32_t type) {
  switch (type) {
    case TP::FLOAT:
    case TP::INT32:
    case TP::UINT32:
      return 4;
    case TP::DOUBLE:
    case TP::INT64:
    case TP::UINT64:
    case TP::COMPLEX64:
      return 8;
    case TP::COMPLEX128:
      return 16;
    case TP::FLOAT16:
    case TP::BFLOAT16:
    case TP::INT16:
    case TP::UINT16:
      return 2;
    case TP::INT8:
    case TP::UINT8:
    case TP::BOOL:
      return 1;
    default:
      return 0;
  }
}

// The tensor's size in bytes from its type and dims; nullopt when not computable (an unknown
// type, a negative dim or an overflow: the importer reports those).
std::optional<uint64_t> expected_bytes(const TP& t) {
  uint64_t n = element_bytes(t.data_type());
  if (n == 0) return std::nullopt;
  for (int64_t d : t.dims()) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

uint64_t parse_size(const std::string& text, const std::string& label, const char* key) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw Error(ErrorKind::ModelFormat,
                label + ": external data " + key + " '" + text + "' is not a byte count");
  return v;
}

// `location` as a file inside `base` (both canonical), or an error saying why not.
fs::path confined_path(const fs::path& base, const std::string& location,
                       const std::string& label) {
  if (location.empty())
    throw Error(ErrorKind::ModelFormat, label + ": external data has an empty location");
  const fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    throw Error(ErrorKind::ModelFormat, label + ": external data location '" + location +
                                            "' is absolute; it must be inside the model's folder");
  for (const fs::path& part : rel)
    if (part == "..")
      throw Error(ErrorKind::ModelFormat, label + ": external data location '" + location +
                                              "' leads out of the model's folder ('..')");
  const fs::path joined = base / rel;
  std::error_code ec;
  if (!fs::exists(joined, ec))
    throw Error(ErrorKind::Io,
                label + ": external data file " + joined.string() + " does not exist");
  const fs::path real = fs::canonical(joined, ec);
  if (ec)
    throw Error(ErrorKind::Io, label + ": cannot resolve " + joined.string() + ": " + ec.message());
  // A symlink inside the folder may point anywhere: what counts is where it leads.
  auto [b, r] = std::mismatch(base.begin(), base.end(), real.begin(), real.end());
  if (b != base.end())
    throw Error(ErrorKind::ModelFormat, label + ": external data location '" + location +
                                            "' resolves to " + real.string() +
                                            ", outside the model's folder " + base.string());
  if (!fs::is_regular_file(real, ec))
    throw Error(ErrorKind::ModelFormat,
                label + ": external data location '" + location + "' is not a regular file");
  return real;
}

}  // namespace

void load_external_data(ParsedModel& model, const std::string& base_dir, const std::string& what) {
  if (!model.proto.has_graph()) return;
  std::map<fs::path, std::shared_ptr<const MappedFile>> files;
  fs::path base;  // canonical, once a tensor needs it
  auto resolve = [&](TP& t, int initializer) {
    if (!is_external(t)) return;
    const std::string label = what + ": tensor '" + t.name() + "'";
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const onnx::StringStringEntryProto& e : t.external_data()) {
      if (e.key() == "location")
        location = e.value();
      else if (e.key() == "offset")
        offset = parse_size(e.value(), label, "offset");
      else if (e.key() == "length")
        length = parse_size(e.value(), label, "length");
      else if (e.key() != "checksum")
        throw Error(ErrorKind::ModelFormat,
                    label + ": unknown external data key '" + e.key() + "'");
    }
    if (base_dir.empty())
      throw Error(ErrorKind::InvalidArgument,
                  label + " is stored in external data ('" + location +
                      "'); load the model from its file, or give the folder of its data "
                      "(SessionOptions::external_data_dir)");
    if (base.empty()) {
      std::error_code ec;
      base = fs::canonical(base_dir, ec);
      if (ec)
        throw Error(ErrorKind::Io,
                    what + ": cannot resolve the model's folder " + base_dir + ": " + ec.message());
    }
    const fs::path path = confined_path(base, location, label);
    auto& file = files[path];
    if (!file) file = std::make_shared<const MappedFile>(path.string());
    const std::optional<uint64_t> want = expected_bytes(t);
    // Without a length the tensor's own size is what is read (the rest of the file may hold
    // other tensors).
    const uint64_t n =
        length ? *length : want.value_or(file->size() - std::min(offset, uint64_t{file->size()}));
    if (want && n != *want)
      throw Error(ErrorKind::ModelFormat, label + ": external data length " + std::to_string(n) +
                                              " is not the tensor's size, " +
                                              std::to_string(*want) + " bytes");
    if (offset > file->size() || n > file->size() - offset)
      throw Error(ErrorKind::ModelFormat,
                  label + ": " + path.string() + " is truncated: it holds " +
                      std::to_string(file->size()) + " bytes, the tensor needs " +
                      std::to_string(n) + " from offset " + std::to_string(offset));
    if (initializer >= 0) {
      model.initializer_data[initializer] = {file->data() + offset, static_cast<size_t>(n)};
      t.set_raw_data(kPlaceholderRawData, kPlaceholderRawDataSize);
    } else {
      t.set_raw_data(file->data() + offset, n);
    }
    t.clear_external_data();
    t.set_data_location(TP::DEFAULT);
  };
  for_each_tensor(*model.proto.mutable_graph(), resolve, true);
  for (auto& [path, file] : files) model.keep_alive.push_back(file);
}

}  // namespace vkgraph::onnx_import
