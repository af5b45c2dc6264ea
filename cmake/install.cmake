# Install rules: `cmake --install build --prefix P` puts the headers, the libraries, the
# `vkgraph` tool, a CMake package and pkg-config files under P, so another project's
#   find_package(vkgraph)  ->  vkgraph::vkgraph (core, Vulkan only), vkgraph::onnx (Session)
# works without this source tree. Include from the top-level CMakeLists.txt after the targets.
# The Python package installs itself (python/CMakeLists.txt, component `python`).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VKGRAPH_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vkgraph
    CACHE STRING "Where the vkgraph CMake package is installed, relative to the prefix")

# Build-tree include paths (the source tree's include/ and src/) mean nothing once installed:
# wrap what the targets declare in BUILD_INTERFACE and give installed users include/ alone.
function(_vkgraph_installable_includes target)
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  if(dirs)
    foreach(dir ${dirs})
      if(dir MATCHES "^\\$<")
        list(APPEND wrapped "${dir}")
      else()
        list(APPEND wrapped "$<BUILD_INTERFACE:${dir}>")
      endif()
    endforeach()
  endif()
  list(APPEND wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_property(TARGET ${target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${wrapped}")
endfunction()

# Core: Vulkan only.
set(_vkgraph_core_targets vkgraph_core vkgraph)
set_target_properties(vkgraph_core PROPERTIES EXPORT_NAME core)
set_target_properties(vkgraph PROPERTIES EXPORT_NAME vkgraph)
foreach(t ${_vkgraph_core_targets})
  _vkgraph_installable_includes(${t})
endforeach()
install(TARGETS ${_vkgraph_core_targets} EXPORT vkgraphTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
install(EXPORT vkgraphTargets NAMESPACE vkgraph:: DESTINATION ${VKGRAPH_CMAKE_INSTALL_DIR}
        COMPONENT devel)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vkgraph DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT devel)
# The headers generated from the shader declarations (vk/shader_id.h, shaders/<family>.h):
# the public headers include them.
install(DIRECTORY ${VKGRAPH_GENERATED_DIR}/vkgraph DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT devel)

# ONNX frontend (Session), when it is built: Protobuf and ONNX come with it.
set(VKGRAPH_INSTALLED_ONNX OFF)
if(TARGET vkgraph_onnx)
  set(VKGRAPH_INSTALLED_ONNX ON)
  set(_vkgraph_onnx_targets vkgraph_onnx_io vkgraph_onnx)
  set_target_properties(vkgraph_onnx_io PROPERTIES EXPORT_NAME onnx_io)
  set_target_properties(vkgraph_onnx PROPERTIES EXPORT_NAME onnx)
  foreach(t ${_vkgraph_onnx_targets})
    _vkgraph_installable_includes(${t})
  endforeach()
  install(TARGETS ${_vkgraph_onnx_targets} EXPORT vkgraphOnnxTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
  install(EXPORT vkgraphOnnxTargets NAMESPACE vkgraph:: DESTINATION ${VKGRAPH_CMAKE_INSTALL_DIR}
          COMPONENT devel)
endif()
if(TARGET vkgraph_cli)
  install(TARGETS vkgraph_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tool)
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/vkgraphConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/vkgraphConfig.cmake INSTALL_DESTINATION ${VKGRAPH_CMAKE_INSTALL_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vkgraphConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkgraphConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/vkgraphConfigVersion.cmake
        DESTINATION ${VKGRAPH_CMAKE_INSTALL_DIR} COMPONENT devel)

# pkg-config: vkgraph (core) and vkgraph-onnx (Session). The libraries are static, so each
# file lists what they link. Paths are relative to the .pc file, so any --prefix works.
file(RELATIVE_PATH VKGRAPH_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(${CMAKE_CURRENT_LIST_DIR}/vkgraph.pc.in ${CMAKE_CURRENT_BINARY_DIR}/vkgraph.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkgraph.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT devel)
if(VKGRAPH_INSTALLED_ONNX)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/vkgraph-onnx.pc.in
                 ${CMAKE_CURRENT_BINARY_DIR}/vkgraph-onnx.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkgraph-onnx.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT devel)
endif()
