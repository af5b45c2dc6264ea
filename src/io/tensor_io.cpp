#include "vkgraph/tensor_io.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

#include "vkgraph/error.h"
#include "vkgraph/file_io.h"

namespace vkgraph {

// .npy data is little-endian and copied byte for byte into HostTensor.
static_assert(std::endian::native == std::endian::little, "vkgraph assumes a little-endian host");

namespace {

constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMaxRank = 64;  // NumPy allows 32 (64 since 2.0); anything beyond is corrupt

// Recursive-descent reader for the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only the subset NumPy writes is accepted; anything else is a ModelFormat error.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  void parse(std::string* descr, bool* fortran_order, Shape* shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{');
    skip_space();
    while (!at('}')) {
      const std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        fail_if(have_descr, "duplicate key 'descr'");
        *descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        fail_if(have_order, "duplicate key 'fortran_order'");
        *fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        fail_if(have_shape, "duplicate key 'shape'");
        *shape = parse_shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
      } else {
        fail_if(!at('}'), "expected ',' or '}'");
      }
    }
    ++pos_;  // '}'
    skip_space();
    fail_if(pos_ != text_.size(), "unexpected text after the header dict");
    fail_if(!have_descr, "missing key 'descr'");
    fail_if(!have_order, "missing key 'fortran_order'");
    fail_if(!have_shape, "missing key 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(ErrorKind::ModelFormat, std::string(name_) + ": malformed npy header (" + problem +
                                            " at offset " + std::to_string(pos_) + ")");
  }
  void fail_if(bool condition, const std::string& problem) const {
    if (condition) fail(problem);
  }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  void expect(char c) {
    fail_if(!at(c), std::string("expected '") + c + "'");
    ++pos_;
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string parse_string() {
    fail_if(!at('\'') && !at('"'), "expected a quoted string");
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    fail_if(end == std::string_view::npos, "unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    // NumPy never writes escapes here; refusing them keeps the parser trivially correct.
    fail_if(value.find('\\') != std::string::npos, "escape sequence in string");
    pos_ = end + 1;
    return value;
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }

  int64_t parse_dim() {
    fail_if(at('-'), "negative dimension");
    fail_if(pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9', "expected a dimension");
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_] - '0';
      fail_if(value > (std::numeric_limits<int64_t>::max() - digit) / 10,
              "dimension does not fit in int64");
      value = value * 10 + digit;
      ++pos_;
    }
    if (at('L')) ++pos_;  // Python 2 era files spell dims as longs: (3L, 4L)
    return value;
  }

  Shape parse_shape() {
    expect('(');
    Shape shape;
    skip_space();
    while (!at(')')) {
      fail_if(shape.size() >= kMaxRank, "more than " + std::to_string(kMaxRank) + " dimensions");
      shape.push_back(parse_dim());
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
      } else {
        fail_if(!at(')'), "expected ',' or ')' in shape");
      }
    }
    ++pos_;  // ')'
    return shape;
  }

  std::string_view text_;
  std::string_view name_;
  size_t pos_ = 0;
};

std::optional<DType> dtype_from_descr(const std::string& descr) {
  if (descr == "<f4") return DType::Float32;
  if (descr == "<f2") return DType::Float16;
  if (descr == "<i4") return DType::Int32;
  if (descr == "<i8") return DType::Int64;
  if (descr == "|b1") return DType::Bool;
  return std::nullopt;
}

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "<f4";
    case DType::Float16:
      return "<f2";
    case DType::Int32:
      return "<i4";
    case DType::Int64:
      return "<i8";
    case DType::Bool:
      return "|b1";
    case DType::Int8:
      return "|i1";
    case DType::UInt8:
      return "|u1";
  }
  throw Error(ErrorKind::InvalidArgument, "invalid dtype");
}

uint32_t read_le(std::span<const uint8_t> bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<uint32_t>(bytes[offset + i]) << (8 * i);
  return value;
}

}  // namespace

HostTensor decode_npy(std::span<const uint8_t> bytes, std::string_view name) {
  const std::string label(name);
  auto fail = [&](const std::string& problem) -> Error {
    return Error(ErrorKind::ModelFormat, label + ": " + problem);
  };

  constexpr size_t kPreambleV1 = 10;  // magic(6) + version(2) + u16 header length
  if (bytes.size() < 8 || !std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin())) {
    throw fail("not an npy file (missing \\x93NUMPY magic)");
  }
  const uint8_t major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw fail("unsupported npy format version " + std::to_string(major) + "." +
               std::to_string(minor));
  }
  // Version 1 stores the header length as u16, versions 2 and 3 as u32.
  const size_t len_width = major == 1 ? 2 : 4;
  const size_t preamble = kPreambleV1 - 2 + len_width;
  if (bytes.size() < preamble) throw fail("truncated npy preamble");
  const size_t header_len = read_le(bytes, 8, len_width);
  if (header_len > bytes.size() - preamble) {
    throw fail("header length " + std::to_string(header_len) + " exceeds the " +
               std::to_string(bytes.size()) + "-byte file");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + preamble), header_len);

  std::string descr;
  bool fortran_order = false;
  Shape shape;
  HeaderParser(header, label).parse(&descr, &fortran_order, &shape);

  const std::optional<DType> dtype = dtype_from_descr(descr);
  if (!dtype) {
    std::string why = "unsupported npy dtype '" + descr + "'";
    if (!descr.empty() && descr[0] == '>') why += " (big-endian data is not supported)";
    throw fail(why + "; supported: <f4 <f2 <i4 <i8 |b1");
  }
  if (fortran_order) {
    throw fail("fortran_order True (column-major) arrays are not supported; save a C-ordered copy");
  }

  int64_t count = 0;
  try {
    count = numel(shape);
  } catch (const Error&) {
    throw fail("invalid shape " + shape_str(shape) + " (element count overflows)");
  }
  const size_t elem = dtype_size(*dtype);
  const size_t data_size = bytes.size() - preamble - header_len;
  // Compare by division first so a huge shape cannot overflow the byte count.
  if (static_cast<uint64_t>(count) > data_size / elem ||
      static_cast<size_t>(count) * elem != data_size) {
    throw fail("data size mismatch: shape " + shape_str(shape) + " needs " + std::to_string(count) +
               " " + dtype_name(*dtype) + " elements of " + std::to_string(elem) + " bytes, but " +
               std::to_string(data_size) + " data bytes follow the header");
  }

  HostTensor tensor;
  tensor.dtype = *dtype;
  tensor.shape = std::move(shape);
  tensor.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(preamble + header_len),
                      bytes.end());
  if (tensor.dtype == DType::Bool) {
    // Keep the invariant that Bool elements are exactly 0 or 1.
    for (uint8_t& b : tensor.bytes) b = b ? 1 : 0;
  }
  return tensor;
}

HostTensor read_npy(const std::string& path) {
  return decode_npy(read_file_bytes(path), path);
}

std::vector<uint8_t> encode_npy(const HostTensor& tensor) {
  const int64_t count = numel(tensor.shape);
  const size_t elem = dtype_size(tensor.dtype);
  check(static_cast<uint64_t>(count) <= tensor.bytes.size() / elem &&
            static_cast<size_t>(count) * elem == tensor.bytes.size(),
        ErrorKind::InvalidArgument,
        std::string("encode_npy: ") + dtype_name(tensor.dtype) + " tensor " +
            shape_str(tensor.shape) + " holds " + std::to_string(tensor.bytes.size()) + " bytes");

  std::string header =
      std::string("{'descr': '") + descr_of(tensor.dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    if (i) header += ", ";
    header += std::to_string(tensor.shape[i]);
  }
  if (tensor.shape.size() == 1) header += ",";  // Python's one-element tuple
  header += "), }";
  // Pad with spaces, ending in '\n', so that the data offset is a multiple of 64.
  constexpr size_t kPreamble = 10, kAlign = 64;
  const size_t unpadded = kPreamble + header.size() + 1;
  header.append((kAlign - unpadded % kAlign) % kAlign, ' ');
  header += '\n';
  check(header.size() <= 0xffff, ErrorKind::InvalidArgument,
        "encode_npy: header too long for npy format 1.0");

  std::vector<uint8_t> out(std::begin(kMagic), std::end(kMagic));
  out.push_back(1);  // version 1.0
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), tensor.bytes.begin(), tensor.bytes.end());
  return out;
}

void write_npy(const std::string& path, const HostTensor& tensor) {
  write_file_bytes(path, encode_npy(tensor));
}

}  // namespace vkgraph
