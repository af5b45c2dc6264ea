#include "onnx/weights_in_place.h"

namespace vkgraph::onnx_import {

namespace {

// Field numbers along the path the cut follows (onnx.proto).
constexpr uint64_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;
constexpr uint64_t kLengthDelimited = 2;

void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(v | 0x80));
  out.push_back(static_cast<char>(v));
}

// One field of a message: its number and wire type, the whole field [start, end) and, for a
// length-delimited one, its payload [payload, end).
struct Field {
  uint64_t number = 0, wire = 0;
  const uint8_t *start = nullptr, *payload = nullptr, *end = nullptr;
};

class FieldReader {
 public:
  FieldReader(const uint8_t* begin, const uint8_t* end) : p_(begin), end_(end) {}
  bool done() const { return p_ == end_; }

  // The next field, or false where the bytes are not a well-formed field.
  bool next(Field& f) {
    f.start = p_;
    uint64_t tag = 0, length = 0;
    if (!varint(tag)) return false;
    f.number = tag >> 3;
    f.wire = tag & 7;
    switch (f.wire) {
      case 0:  // varint
        if (!varint(length)) return false;
        length = 0;
        break;
      case 1:  // fixed64
        length = 8;
        break;
      case 5:  // fixed32
        length = 4;
        break;
      case kLengthDelimited:
        if (!varint(length)) return false;
        break;
      default:  // groups (deprecated) and invalid wire types
        return false;
    }
    if (length > static_cast<uint64_t>(end_ - p_)) return false;
    f.payload = p_;
    p_ += length;
    f.end = p_;
    return true;
  }

 private:
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && p_ != end_; shift += 7) {
      const uint8_t byte = *p_++;
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }

  const uint8_t* p_;
  const uint8_t* end_;
};

class Excisor {
 public:
  Excisor(const uint8_t* base, size_t min_bytes) : base_(base), min_bytes_(min_bytes) {}

  // Each rewrites the message in [begin, end) into `out`; false where it is not well formed.
  bool model(const uint8_t* begin, const uint8_t* end, std::string& out) {
    bool seen_graph = false;
    return rewrite(begin, end, out, kModelGraph, [&](const Field& f, std::string& to) {
      if (seen_graph) return false;
      seen_graph = true;
      return graph(f.payload, f.end, to);
    });
  }

  std::vector<Excision> take() { return std::move(excisions_); }

 private:
  bool graph(const uint8_t* begin, const uint8_t* end, std::string& out) {
    return rewrite(begin, end, out, kGraphInitializer, [&](const Field& f, std::string& to) {
      const bool ok = tensor(f.payload, f.end, to);
      ++initializer_;
      return ok;
    });
  }

  bool tensor(const uint8_t* begin, const uint8_t* end, std::string& out) {
    bool seen_raw = false;
    return rewrite(begin, end, out, kTensorRawData, [&](const Field& f, std::string& to) {
      if (seen_raw) return false;
      seen_raw = true;
      const size_t size = static_cast<size_t>(f.end - f.payload);
      if (size < min_bytes_) {
        to.append(reinterpret_cast<const char*>(f.payload), size);
        return true;
      }
      excisions_.push_back({initializer_, static_cast<size_t>(f.payload - base_), size});
      to.append(kPlaceholderRawData, kPlaceholderRawDataSize);
      return true;
    });
  }

  // Copies the fields of [begin, end) to `out`, but the length-delimited fields numbered
  // `number`, whose payload `inner` writes instead (under a new length).
  template <typename Inner>
  bool rewrite(const uint8_t* begin, const uint8_t* end, std::string& out, uint64_t number,
               Inner&& inner) {
    FieldReader reader(begin, end);
    Field f;
    std::string payload;
    while (!reader.done()) {
      if (!reader.next(f)) return false;
      if (f.number != number || f.wire != kLengthDelimited) {
        out.append(reinterpret_cast<const char*>(f.start), static_cast<size_t>(f.end - f.start));
        continue;
      }
      payload.clear();
      if (!inner(f, payload)) return false;
      put_varint(out, number << 3 | kLengthDelimited);
      put_varint(out, payload.size());
      out += payload;
    }
    return true;
  }

  const uint8_t* base_;
  size_t min_bytes_;
  int initializer_ = 0;
  std::vector<Excision> excisions_;
};

}  // namespace

std::optional<ExcisedModel> excise_initializer_data(std::span<const uint8_t> model,
                                                    size_t min_bytes) {
  Excisor excisor(model.data(), min_bytes);
  ExcisedModel out;
  if (!excisor.model(model.data(), model.data() + model.size(), out.bytes)) return std::nullopt;
  out.excisions = excisor.take();
  if (out.excisions.empty()) return std::nullopt;
  return out;
}

}  // namespace vkgraph::onnx_import
