# Host-side libraries and their tests; no Vulkan. Include from the top-level CMakeLists.txt:
#   include(cmake/host_libs.cmake)
# Targets:
#   vkgraph_core     types, errors, shape rules, .npy I/O (no protobuf)
#   vkgraph_onnx_io  TensorProto I/O + constant folding (links onnx_proto)
#   test_host        GoogleTest executable, registered with gtest_discover_tests when
#                    VKGRAPH_BUILD_HOST_TESTS is ON (call enable_testing() at top level)
set(_vkgraph_root "${CMAKE_CURRENT_LIST_DIR}/..")

option(VKGRAPH_BUILD_HOST_TESTS "Build the host-side GoogleTest suite (test_host)" ON)
set(VKGRAPH_ONNX_TESTDATA_DIR "/usr/share/libonnx-testdata/data"
    CACHE PATH "ONNX backend test data (libonnx-testdata); tests using it skip when absent")

find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED)

add_library(vkgraph_core STATIC
  ${_vkgraph_root}/src/core/types.cpp
  ${_vkgraph_root}/src/core/error.cpp
  ${_vkgraph_root}/src/core/shape_rules.cpp
  ${_vkgraph_root}/src/core/file_io.cpp
  ${_vkgraph_root}/src/io/tensor_io.cpp)
target_include_directories(vkgraph_core PUBLIC ${_vkgraph_root}/include)
target_compile_features(vkgraph_core PUBLIC cxx_std_20)

add_library(vkgraph_onnx_io STATIC
  ${_vkgraph_root}/src/onnx/onnx_tensor.cpp
  ${_vkgraph_root}/src/onnx/fold.cpp
  ${_vkgraph_root}/src/onnx/fold_arithmetic.cpp
  ${_vkgraph_root}/src/onnx/fold_shape.cpp
  ${_vkgraph_root}/src/onnx/fold_attrs.cpp)
# src/ is public so internal headers are included as "onnx/fold.h".
target_include_directories(vkgraph_onnx_io PUBLIC ${_vkgraph_root}/src)
target_link_libraries(vkgraph_onnx_io PUBLIC vkgraph_core onnx_proto)

if(VKGRAPH_BUILD_HOST_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
  add_executable(test_host
    ${_vkgraph_root}/tests/test_tensor_io.cpp
    ${_vkgraph_root}/tests/test_fold.cpp
    ${_vkgraph_root}/tests/test_shape_rules.cpp)
  target_link_libraries(test_host PRIVATE vkgraph_onnx_io GTest::gtest_main)
  target_compile_definitions(test_host PRIVATE
    VKGRAPH_ONNX_TESTDATA_DIR="${VKGRAPH_ONNX_TESTDATA_DIR}")
  # PRE_TEST: listing tests at ctest time keeps the build from running the binary.
  gtest_discover_tests(test_host DISCOVERY_MODE PRE_TEST)
endif()
