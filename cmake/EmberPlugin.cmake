# ember_add_plugin(<name> SOURCES <src>... [LIBS <lib>...] [OUTPUT_DIR <dir>])
# Builds libember-<name>.so as a MODULE that links only the plugin SDK (never the core) and
# exports exactly one dynamic symbol, the entry point (see plugins/include/ember/plugin_abi.h).
set(EMBER_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/plugin.map)

function(ember_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  set(target ember-plugin-${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${EMBER_PLUGIN_OUTPUT_DIR})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib" OUTPUT_NAME "ember-${name}"
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR}
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE ember::plugin_sdk ${ARG_LIBS})
  target_link_options(${target} PRIVATE -Wl,--version-script=${EMBER_PLUGIN_VERSION_SCRIPT})
  # A plugin resolves nothing from the core, so every undefined symbol is an error; except
  # under clang's sanitizers, whose runtime lives in the executable, not in shared libraries.
  if(NOT (EMBER_SANITIZED AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang"))
    target_link_options(${target} PRIVATE -Wl,--no-undefined -Wl,-z,defs)
  endif()
  ember_target_defaults(${target})
endfunction()
