# Host-side libraries; no Vulkan. Included from the top-level CMakeLists.txt:
#   vkgraph_core     types, errors, shape rules, .npy I/O, the host thread pool (no protobuf)
#   vkgraph_onnx_io  TensorProto I/O + constant folding (links onnx_proto), with VKGRAPH_ONNX
set(_vkgraph_root "${CMAKE_CURRENT_LIST_DIR}/..")

add_library(vkgraph_core STATIC
  ${_vkgraph_root}/src/core/types.cpp
  ${_vkgraph_root}/src/core/error.cpp
  ${_vkgraph_root}/src/core/shape_rules.cpp
  ${_vkgraph_root}/src/core/file_io.cpp
  ${_vkgraph_root}/src/core/parallel_for.cpp
  ${_vkgraph_root}/src/io/tensor_io.cpp)
target_include_directories(vkgraph_core PUBLIC ${_vkgraph_root}/include
                           PRIVATE ${_vkgraph_root}/src)
find_package(Threads REQUIRED)
target_link_libraries(vkgraph_core PRIVATE Threads::Threads)
target_compile_features(vkgraph_core PUBLIC cxx_std_20)

if(VKGRAPH_ONNX)
  find_package(Protobuf REQUIRED)
  find_package(ONNX REQUIRED)
  add_library(vkgraph_onnx_io STATIC
    ${_vkgraph_root}/src/onnx/onnx_tensor.cpp
    ${_vkgraph_root}/src/onnx/fold.cpp
    ${_vkgraph_root}/src/onnx/fold_arithmetic.cpp
    ${_vkgraph_root}/src/onnx/fold_shape.cpp
    ${_vkgraph_root}/src/onnx/fold_index.cpp
    ${_vkgraph_root}/src/onnx/fold_data.cpp
    ${_vkgraph_root}/src/onnx/fold_attrs.cpp)
  # src/ is private: its headers are internal ("onnx/fold.h"); users add it themselves.
  target_include_directories(vkgraph_onnx_io PRIVATE ${_vkgraph_root}/src)
  target_link_libraries(vkgraph_onnx_io PUBLIC vkgraph_core onnx_proto)
endif()
