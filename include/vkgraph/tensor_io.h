#pragma once
// Host tensors to and from NumPy .npy files. Needs no protobuf; ONNX TensorProto files live in
// onnx_tensor.h, whole-file reads and writes in file_io.h.
//
// Every malformed input throws Error(ModelFormat, "<name>: <problem>"); a file that cannot be
// opened, read or written throws Error(Io, ...). Nothing here trusts sizes from the file
// before checking them against the bytes actually present.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkgraph/types.h"

namespace vkgraph {

// Reads NumPy .npy format 1.0, 2.0 or 3.0. Accepted descr values: '<f4' (Float32),
// '<f2' (Float16), '<i4' (Int32), '<i8' (Int64) and '|b1' (Bool; stored bytes are normalised
// to 0/1). Any other dtype ('|u1' included), big-endian data and fortran_order True are
// rejected. The data must be exactly numel * element size bytes.
HostTensor read_npy(const std::string& path);
// Same, from bytes in memory; `name` only labels error messages.
HostTensor decode_npy(std::span<const uint8_t> bytes, std::string_view name = "<npy bytes>");

// Writes format 1.0, C order, with the header padded so the data starts 64-byte aligned
// (what NumPy itself writes). Throws InvalidArgument when tensor.bytes does not match its
// shape and dtype.
void write_npy(const std::string& path, const HostTensor& tensor);
std::vector<uint8_t> encode_npy(const HostTensor& tensor);

}  // namespace vkgraph
