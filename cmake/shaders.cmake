# Compiles GLSL compute shaders to SPIR-V at build time, embeds them in the library and
# generates the C++ that names them (docs/notes/arch-decls.md).
#
# An op family is declared once, in src/ops/<family>.cmake:
#   vkgraph_shader_family(FAMILY
#     AXIS <name> ENUM <value>...     an enum vkgraph::shaders::FAMILY::<Name> (CamelCase)
#     AXIS <name> DTYPE               a vkgraph::DType; keys f32 f16 i32 i64 bool
#     AXIS <name> UINT                a uint32_t (tile sizes, element bits)
#     AXIS <name> BOOL                a bool; keys 0 1
#     [PROPERTY <name>]...            constexpr bool <name> = true
#     [FLAGS <name> <enum value>...]  constexpr int <name>(Enum): the value's position in the
#                                     list, -1 for values not listed (the first ENUM axis)
#   vkgraph_variant(FAMILY SHADER_NAME SOURCE KEY <one key per axis, in order> [DEFINES d...])
# and generates build/generated/vkgraph/shaders/FAMILY.h: its enums and properties (float16:
# whether some variant takes float16 tensors, a DTYPE key f16 or a `bits` key 16),
# find(keys...) -> std::optional<vk::ShaderId> for keys known at run time, and get<keys...>(),
# which fails to compile for a combination that was not declared.
#
# Every shader, declared through a family or in the older style
#   vkgraph_shader(NAME SOURCE [DEFINES...])  e.g. vkgraph_shader(binary_add binary.comp OP=ADD)
# gets an enumerator vk::ShaderId::NAME (generated vkgraph/vk/shader_id.h);
# vkgraph_embed_shaders(TARGET) then generates the registry (vk::shader_info, vk::find_shader).
# VKGRAPH_SPIRV_FROM=<another build>/shaders embeds that build's compiled shaders instead of
# compiling them again (the fuzz build in CI reuses the main build's; fuzz/README.md). That
# build must be up to date: its files are taken as they are.
set(VKGRAPH_SPIRV_FROM "" CACHE PATH "Take compiled shaders (*.spv.inc) from this folder")
if(NOT VKGRAPH_SPIRV_FROM)
  find_program(GLSLC glslc REQUIRED)
endif()
set(VKGRAPH_SHADER_DIR ${CMAKE_BINARY_DIR}/shaders)
set(VKGRAPH_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${VKGRAPH_SHADER_DIR} ${VKGRAPH_GENERATED_DIR}/vkgraph/shaders
     ${VKGRAPH_GENERATED_DIR}/vkgraph/vk)

function(vkgraph_shader name source)
  get_filename_component(src ${source} ABSOLUTE)
  get_filename_component(dir ${src} DIRECTORY)
  set(defines "")
  foreach(d ${ARGN})
    list(APPEND defines "-D${d}")
  endforeach()
  set(out ${VKGRAPH_SHADER_DIR}/${name}.spv.inc)
  if(VKGRAPH_SPIRV_FROM)
    # Copied into this build's shader folder, where the registry includes it from.
    set(from ${VKGRAPH_SPIRV_FROM}/${name}.spv.inc)
    if(NOT EXISTS ${from})
      message(FATAL_ERROR "VKGRAPH_SPIRV_FROM: ${from} is missing; build the shaders there first")
    endif()
    configure_file(${from} ${out} COPYONLY)
    set_property(GLOBAL APPEND PROPERTY VKGRAPH_SHADER_NAMES ${name})
    set_property(GLOBAL APPEND PROPERTY VKGRAPH_SHADER_FILES ${out})
    return()
  endif()
  file(GLOB headers CONFIGURE_DEPENDS ${dir}/*.glsl)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${GLSLC} --target-env=vulkan1.1 -O -mfmt=c -fshader-stage=compute
            -I${dir} ${defines} -o ${out} ${src}
    DEPENDS ${src} ${headers}
    COMMENT "glslc ${name}"
    VERBATIM)
  set_property(GLOBAL APPEND PROPERTY VKGRAPH_SHADER_NAMES ${name})
  set_property(GLOBAL APPEND PROPERTY VKGRAPH_SHADER_FILES ${out})
endfunction()

# snake_case -> CamelCase, for enumerators (or the spelling the family declared).
function(_vkgraph_camel out value)
  get_property(declared GLOBAL PROPERTY VKGRAPH_CAMEL_${_vkgraph_family}_${value})
  if(declared)
    set(${out} "${declared}" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "_" ";" parts "${value}")
  set(r "")
  foreach(p ${parts})
    string(SUBSTRING "${p}" 0 1 first)
    string(SUBSTRING "${p}" 1 -1 rest)
    string(TOUPPER "${first}" first)
    string(APPEND r "${first}${rest}")
  endforeach()
  set(${out} "${r}" PARENT_SCOPE)
endfunction()

function(vkgraph_shader_family family)
  set(p VKGRAPH_FAMILY_${family})
  get_property(known GLOBAL PROPERTY VKGRAPH_FAMILIES)
  if(family IN_LIST known)
    message(FATAL_ERROR "shader family ${family} declared twice")
  endif()
  set_property(GLOBAL APPEND PROPERTY VKGRAPH_FAMILIES ${family})
  set(axes "")
  set(mode "")
  set(axis "")
  foreach(arg ${ARGN})
    if(arg STREQUAL "AXIS" OR arg STREQUAL "PROPERTY" OR arg STREQUAL "FLAGS")
      set(mode ${arg})
      set(axis "")
    elseif(mode STREQUAL "AXIS" AND axis STREQUAL "")
      set(axis ${arg})
      set(kind "")
    elseif(mode STREQUAL "AXIS" AND kind STREQUAL "")
      if(NOT arg MATCHES "^(ENUM|DTYPE|UINT|BOOL)$")
        message(FATAL_ERROR "shader family ${family}: axis ${axis} has unknown kind ${arg}")
      endif()
      set(kind ${arg})
      list(APPEND axes "${axis}:${kind}")
    elseif(mode STREQUAL "AXIS" AND kind STREQUAL "ENUM")
      # `snake=Camel` spells the enumerator where CamelCase of the name would not.
      string(REPLACE "=" ";" vc "${arg}")
      list(GET vc 0 v)
      set_property(GLOBAL APPEND PROPERTY ${p}_VALUES_${axis} ${v})
      list(LENGTH vc nvc)
      if(nvc EQUAL 2)
        list(GET vc 1 c)
        set_property(GLOBAL PROPERTY VKGRAPH_CAMEL_${family}_${v} ${c})
      endif()
    elseif(mode STREQUAL "PROPERTY")
      set_property(GLOBAL APPEND PROPERTY ${p}_PROPERTIES ${arg})
    elseif(mode STREQUAL "FLAGS" AND axis STREQUAL "")
      set(axis ${arg})
      set_property(GLOBAL APPEND PROPERTY ${p}_FLAG_LISTS ${arg})
    elseif(mode STREQUAL "FLAGS")
      set_property(GLOBAL APPEND PROPERTY ${p}_FLAG_${axis} ${arg})
    else()
      message(FATAL_ERROR "shader family ${family}: unexpected argument ${arg}")
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY ${p}_AXES "${axes}")
endfunction()

function(vkgraph_variant family name source)
  set(p VKGRAPH_FAMILY_${family})
  get_property(axes GLOBAL PROPERTY ${p}_AXES)
  cmake_parse_arguments(V "" "" "KEY;DEFINES" ${ARGN})
  list(LENGTH axes n_axes)
  list(LENGTH V_KEY n_keys)
  if(NOT n_axes EQUAL n_keys)
    message(FATAL_ERROR "${name}: family ${family} has ${n_axes} axes, KEY gives ${n_keys}")
  endif()
  set(i 0)
  foreach(a ${axes})
    string(REPLACE ":" ";" ak ${a})
    list(GET ak 0 axis)
    list(GET ak 1 kind)
    list(GET V_KEY ${i} key)
    if(kind STREQUAL "ENUM")
      get_property(values GLOBAL PROPERTY ${p}_VALUES_${axis})
      if(NOT key IN_LIST values)
        message(FATAL_ERROR "${name}: '${key}' is not a value of ${family} axis ${axis}")
      endif()
    elseif(kind STREQUAL "DTYPE" AND NOT key MATCHES "^(f32|f16|i32|i64|bool)$")
      message(FATAL_ERROR "${name}: '${key}' is not a dtype key (f32 f16 i32 i64 bool)")
    elseif(kind STREQUAL "UINT" AND NOT key MATCHES "^[0-9]+$")
      message(FATAL_ERROR "${name}: '${key}' is not an unsigned number")
    elseif(kind STREQUAL "BOOL" AND NOT key MATCHES "^(0|1)$")
      message(FATAL_ERROR "${name}: '${key}' is not 0 or 1")
    endif()
    math(EXPR i "${i} + 1")
  endforeach()
  string(REPLACE ";" "|" joined "${V_KEY}")
  set_property(GLOBAL APPEND PROPERTY ${p}_VARIANTS "${name}|${joined}")
  vkgraph_shader(${name} ${source} ${V_DEFINES})
endfunction()

# The C++ spelling of key `key` on an axis of `kind`.
function(_vkgraph_key_cpp out kind enum_type key)
  if(kind STREQUAL "ENUM")
    _vkgraph_camel(c ${key})
    set(r "${enum_type}::${c}")
  elseif(kind STREQUAL "DTYPE")
    set(map_f32 Float32)
    set(map_f16 Float16)
    set(map_i32 Int32)
    set(map_i64 Int64)
    set(map_bool Bool)
    set(r "DType::${map_${key}}")
  elseif(kind STREQUAL "UINT")
    set(r "${key}u")
  else()
    if(key)
      set(r true)
    else()
      set(r false)
    endif()
  endif()
  set(${out} "${r}" PARENT_SCOPE)
endfunction()

function(_vkgraph_family_header family)
  set(_vkgraph_family ${family})
  set(p VKGRAPH_FAMILY_${family})
  get_property(axes GLOBAL PROPERTY ${p}_AXES)
  get_property(variants GLOBAL PROPERTY ${p}_VARIANTS)
  get_property(properties GLOBAL PROPERTY ${p}_PROPERTIES)
  get_property(flag_lists GLOBAL PROPERTY ${p}_FLAG_LISTS)
  set(h "// Generated from src/ops/${family}.cmake by cmake/shaders.cmake. Do not edit.\n")
  string(APPEND h "#pragma once\n#include <cstdint>\n#include <optional>\n\n"
         "#include \"vkgraph/types.h\"\n#include \"vkgraph/vk/shader_id.h\"\n\n"
         "namespace vkgraph::shaders::${family} {\n\n")
  set(params "")
  set(tparams "")
  set(targs "")
  set(fields "")
  set(match "")
  set(first_enum "")
  foreach(a ${axes})
    string(REPLACE ":" ";" ak ${a})
    list(GET ak 0 axis)
    list(GET ak 1 kind)
    _vkgraph_camel(type ${axis})
    if(kind STREQUAL "ENUM")
      get_property(values GLOBAL PROPERTY ${p}_VALUES_${axis})
      string(APPEND h "enum class ${type} : uint8_t {\n")
      foreach(v ${values})
        _vkgraph_camel(c ${v})
        string(APPEND h "  ${c},\n")
      endforeach()
      string(APPEND h "};\n// The value's name as declared (snake_case), for labels and errors.\n"
             "constexpr const char* name(${type} v) {\n  switch (v) {\n")
      foreach(v ${values})
        _vkgraph_camel(c ${v})
        string(APPEND h "    case ${type}::${c}:\n      return \"${v}\";\n")
      endforeach()
      string(APPEND h "  }\n  return \"?\";\n}\n\n")
      if(first_enum STREQUAL "")
        set(first_enum ${type})
        set(first_enum_axis ${axis})
      endif()
      set(ctype ${type})
    elseif(kind STREQUAL "DTYPE")
      set(ctype DType)
    elseif(kind STREQUAL "UINT")
      set(ctype uint32_t)
    else()
      set(ctype bool)
    endif()
    list(APPEND params "${ctype} ${axis}")
    list(APPEND tparams "${ctype} ${axis}_")
    list(APPEND targs "${axis}_")
    string(APPEND fields "  ${ctype} ${axis};\n")
    list(APPEND match "v.${axis} == ${axis}")
  endforeach()
  set(float16 false)
  foreach(entry ${variants})
    string(REPLACE "|" ";" parts "${entry}")
    list(POP_FRONT parts name)
    set(i 0)
    foreach(a ${axes})
      list(GET parts ${i} key)
      if((a MATCHES ":DTYPE$" AND key STREQUAL "f16") OR (a STREQUAL "bits:UINT" AND key EQUAL 16))
        set(float16 true)
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
  endforeach()
  string(APPEND h "// Whether some variant takes float16 tensors.\n"
         "inline constexpr bool float16 = ${float16};\n")
  foreach(prop ${properties})
    string(APPEND h "inline constexpr bool ${prop} = true;\n")
  endforeach()
  foreach(fl ${flag_lists})
    get_property(members GLOBAL PROPERTY ${p}_FLAG_${fl})
    string(APPEND h "// Position in the declaration's ${fl} list; -1 when not listed.\n"
           "constexpr int ${fl}(${first_enum} v) {\n  switch (v) {\n")
    set(k 0)
    foreach(m ${members})
      _vkgraph_camel(c ${m})
      string(APPEND h "    case ${first_enum}::${c}:\n      return ${k};\n")
      math(EXPR k "${k} + 1")
    endforeach()
    string(APPEND h "    default:\n      return -1;\n  }\n}\n")
  endforeach()
  string(APPEND h "\nstruct Variant {\n${fields}  vk::ShaderId shader;\n};\n"
         "inline constexpr Variant kVariants[] = {\n")
  foreach(entry ${variants})
    string(REPLACE "|" ";" parts "${entry}")
    list(POP_FRONT parts name)
    set(keys "")
    set(i 0)
    foreach(a ${axes})
      string(REPLACE ":" ";" ak ${a})
      list(GET ak 0 axis)
      list(GET ak 1 kind)
      _vkgraph_camel(type ${axis})
      list(GET parts ${i} key)
      _vkgraph_key_cpp(c ${kind} ${type} ${key})
      string(APPEND keys "${c}, ")
      math(EXPR i "${i} + 1")
    endforeach()
    string(APPEND h "    {${keys}vk::ShaderId::${name}},\n")
  endforeach()
  string(REPLACE ";" ", " params_s "${params}")
  string(REPLACE ";" " && " match_s "${match}")
  string(REPLACE ";" ", " tparams_s "${tparams}")
  string(REPLACE ";" ", " targs_s "${targs}")
  string(APPEND h "};\n\n"
    "// The variant for keys chosen at run time; nullopt when the family does not declare it.\n"
    "constexpr std::optional<vk::ShaderId> find(${params_s}) {\n"
    "  for (const Variant& v : kVariants)\n    if (${match_s}) return v.shader;\n"
    "  return std::nullopt;\n}\n\n"
    "// The variant for keys known at compile time: not declared, not compiled.\n"
    "template <${tparams_s}>\nconstexpr vk::ShaderId get() {\n"
    "  constexpr std::optional<vk::ShaderId> id = find(${targs_s});\n"
    "  static_assert(id.has_value(), \"no such variant in src/ops/${family}.cmake\");\n"
    "  return *id;\n}\n\n}  // namespace vkgraph::shaders::${family}\n")
  file(GENERATE OUTPUT ${VKGRAPH_GENERATED_DIR}/vkgraph/shaders/${family}.h CONTENT "${h}")
endfunction()

function(vkgraph_embed_shaders target)
  get_property(names GLOBAL PROPERTY VKGRAPH_SHADER_NAMES)
  get_property(files GLOBAL PROPERTY VKGRAPH_SHADER_FILES)
  get_property(families GLOBAL PROPERTY VKGRAPH_FAMILIES)
  list(SORT names)
  set(ids "// Generated by cmake/shaders.cmake. Do not edit.\n#pragma once\n#include <cstdint>\n\n"
          "namespace vkgraph::vk {\n\n// Every embedded shader, by name.\n"
          "enum class ShaderId : uint16_t {\n")
  foreach(n ${names})
    string(APPEND ids "  ${n},\n")
  endforeach()
  string(APPEND ids "};\n\n}  // namespace vkgraph::vk\n")
  file(GENERATE OUTPUT ${VKGRAPH_GENERATED_DIR}/vkgraph/vk/shader_id.h CONTENT "${ids}")
  foreach(f ${families})
    _vkgraph_family_header(${f})
  endforeach()

  set(body "// Generated by cmake/shaders.cmake. Do not edit.\n#include <algorithm>\n#include <cstdint>\n#include \"vkgraph/error.h\"\n#include \"vkgraph/vk/pipeline.h\"\nnamespace vkgraph::vk {\nnamespace {\n")
  foreach(n ${names})
    string(APPEND body "const uint32_t k_${n}[] =\n#include \"${n}.spv.inc\"\n;\n")
  endforeach()
  # Sorted by name, which is also ShaderId order.
  string(APPEND body "const ShaderInfo kShaders[] = {\n")
  foreach(n ${names})
    string(APPEND body "    {\"${n}\", k_${n}, sizeof(k_${n}) / 4},\n")
  endforeach()
  string(APPEND body "};\n}  // namespace\n"
    "const ShaderInfo* shader_info(ShaderId id) {\n"
    "  size_t i = static_cast<size_t>(id);\n"
    "  return i < std::size(kShaders) ? &kShaders[i] : nullptr;\n}\n"
    "const ShaderInfo& find_shader(std::string_view name) {\n"
    "  auto it = std::lower_bound(std::begin(kShaders), std::end(kShaders), name,\n"
    "      [](const ShaderInfo& s, std::string_view n) { return std::string_view(s.name) < n; });\n"
    "  if (it == std::end(kShaders) || it->name != name)\n"
    "    throw Error(ErrorKind::Unsupported, \"no shader named '\" + std::string(name) + \"'\");\n"
    "  return *it;\n}\n"
    "std::vector<std::string> shader_names() {\n  std::vector<std::string> v;\n"
    "  for (auto& s : kShaders) v.emplace_back(s.name);\n  return v;\n}\n"
    "}  // namespace vkgraph::vk\n")
  set(registry ${VKGRAPH_SHADER_DIR}/shader_registry.cpp)
  file(GENERATE OUTPUT ${registry} CONTENT "${body}")
  target_sources(${target} PRIVATE ${registry} ${files})
  target_include_directories(${target} PRIVATE ${VKGRAPH_SHADER_DIR}
                             PUBLIC $<BUILD_INTERFACE:${VKGRAPH_GENERATED_DIR}>)
endfunction()
