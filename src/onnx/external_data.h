#pragma once
// Tensors a model stores beside it (ONNX external data: `save_as_external_data`, and every
// model over protobuf's 2 GiB limit). Each such TensorProto names a file by `location`, with an
// optional byte `offset` and `length`; the file lies in the model's folder. Resolving reads each
// tensor's bytes from a memory map of its file into the tensor's raw_data, so the rest of the
// loader (ONNX's checker, the importer) sees an ordinary model; the model's host memory is then
// what an embedded model's is.
//
// Locations are confined to the folder: an absolute path, a `..` component, or a symlink that
// leads out of it is refused (ModelFormat), as is anything but a regular file. A missing file
// is an Io error; a file too short for offset + length, or a length that is not the tensor's
// size, a ModelFormat error naming tensor, file and sizes. A `checksum` entry is accepted and
// not verified.
//
// The main graph's initializers are not copied: their raw_data becomes the placeholder of
// weights_in_place.h, and ParsedModel::initializer_data points into the mapped file, which
// ParsedModel::keep_alive keeps mapped. Tensors elsewhere (attributes, subgraphs) are copied
// into raw_data.
#include <string>

#include "onnx/load.h"

namespace vkgraph::onnx_import {

// Resolves every external tensor of the model (initializers, Constant and other TENSOR
// attributes, in subgraphs too) against `base_dir`. With an empty `base_dir` (a model given as
// bytes) an external tensor is an InvalidArgument error saying how to give the folder. `what`
// names the model in errors.
void load_external_data(ParsedModel& model, const std::string& base_dir, const std::string& what);

}  // namespace vkgraph::onnx_import
