# ember_add_plugin(<name> SOURCES <src>... [LIBS <lib>...] [OUTPUT_DIR <dir>])
# Builds libember-<name>.so (target ember-plugin-<name>) as a MODULE that links only the plugin
# SDK (never the core) and exports exactly one dynamic symbol, the entry point (see
# <ember/plugin_abi.h>). The same file serves Ember's own tree and, installed in
# lib/cmake/Ember/, every project that calls find_package(Ember): a third-party plugin is built
# exactly as the in-tree ones are.
#
# OUTPUT_DIR defaults to EMBER_PLUGIN_OUTPUT_DIR if the project sets it, else the current binary
# directory. To ship a plugin so that Ember finds it without EMBER_PLUGIN_PATH, install it into
# Ember_PLUGIN_DIR (set by find_package(Ember)): install(TARGETS ember-plugin-<name> DESTINATION
# ${Ember_PLUGIN_DIR}).
set(EMBER_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/plugin.map)

function(ember_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  set(target ember-plugin-${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_DIR)
    if(EMBER_PLUGIN_OUTPUT_DIR)
      set(ARG_OUTPUT_DIR ${EMBER_PLUGIN_OUTPUT_DIR})
    else()
      set(ARG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib" OUTPUT_NAME "ember-${name}"
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR}
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE Ember::plugin_sdk ${ARG_LIBS})
  target_link_options(${target} PRIVATE -Wl,--version-script=${EMBER_PLUGIN_VERSION_SCRIPT})
  # A plugin resolves nothing from the core, so every undefined symbol is an error; except
  # under clang's sanitizers, whose runtime lives in the executable, not in shared libraries.
  if(NOT (EMBER_SANITIZED AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang"))
    target_link_options(${target} PRIVATE -Wl,--no-undefined -Wl,-z,defs)
  endif()
  if(COMMAND ember_target_defaults)  # Ember's own warning flags, inside its tree only
    ember_target_defaults(${target})
  endif()
endfunction()
