# Installing Ember and packaging it, in one place (ARCHITECTURE.md, "Install layout, packages and
# versions"). `cmake --install <build> --prefix P` lays out:
#   P/lib/libember_core.so.<v>, libember.so.<v>, libember_graph.so.<v> (+ SONAME and dev symlinks)
#   P/lib/ember-plugins/libember-<backend>.so   every backend that was built
#   P/include/ember/...                         the public headers
#   P/lib/cmake/Ember/                          the CMake package (Ember::ember, Ember::core,
#                                               Ember::graph, Ember::plugin_sdk, ember_add_plugin)
#   P/lib/pkgconfig/ember.pc, ember-plugin-sdk.pc
#   P/bin/ember                                 the command line
# Nothing in it holds an absolute path: copied elsewhere, the tree still works (Note [Plugins
# live next to the core]). Each part is an install component, and CPack makes one Debian
# package per component, so a deployment installs exactly the backends it needs.
include(CMakePackageConfigHelpers)

set(EMBER_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Ember)
set(EMBER_INSTALL_PLUGINDIR ${CMAKE_INSTALL_LIBDIR}/ember-plugins)

# Libraries: the versioned files go to the runtime package, the unversioned dev symlinks to dev.
install(TARGETS ember_core ember ember_graph ember_plugin_sdk EXPORT EmberTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set_target_properties(ember ember_graph PROPERTIES INSTALL_RPATH "$ORIGIN")

# Headers: everything under the four include roots is public; private headers live elsewhere.
foreach(root core/include api/include graph/include plugins/include)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${root}/ember DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          COMPONENT dev FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp" PATTERN "*.def")
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/include/ember/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember COMPONENT dev)

# Backends: one component each.
set(EMBER_BACKENDS cpu reference)
foreach(comm gloo mpi nccl)  # communication backends, where they were built
  if(TARGET ember-plugin-${comm})
    list(APPEND EMBER_BACKENDS ${comm})
  endif()
endforeach()
if(TARGET ember-plugin-cuda)
  list(APPEND EMBER_BACKENDS cuda)
endif()
foreach(backend ${EMBER_BACKENDS})
  install(TARGETS ember-plugin-${backend} LIBRARY DESTINATION ${EMBER_INSTALL_PLUGINDIR}
          COMPONENT backend_${backend})
endforeach()
# The CPU backend ships its oneDNN (Note [oneDNN from the wheels] in tools/setup.sh) in cpu/
# beside the plugin, under its SONAME, with oneDNN's license; the plugin loader only considers
# libember* files, so nothing there is mistaken for a plugin.
install(FILES $<TARGET_FILE:DNNL::dnnl> DESTINATION ${EMBER_INSTALL_PLUGINDIR}/cpu
        RENAME libdnnl.so.3 COMPONENT backend_cpu)
install(FILES ${EMBER_ONEDNN_DIR}/share/doc/onednn/LICENSE
              ${EMBER_ONEDNN_DIR}/share/doc/onednn/THIRD-PARTY-PROGRAMS
        DESTINATION ${EMBER_INSTALL_PLUGINDIR}/cpu/onednn-license COMPONENT backend_cpu)

# The command line.
install(TARGETS ember_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
set_target_properties(ember_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

# The CMake package.
install(EXPORT EmberTargets NAMESPACE Ember:: DESTINATION ${EMBER_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/EmberConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/EmberConfig.cmake
                              INSTALL_DESTINATION ${EMBER_INSTALL_CMAKEDIR}
                              PATH_VARS EMBER_INSTALL_PLUGINDIR)
# Note [Version compatibility]: a request for another major version is refused.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/EmberConfig.cmake ${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/EmberPlugin.cmake ${CMAKE_CURRENT_LIST_DIR}/plugin.map
        DESTINATION ${EMBER_INSTALL_CMAKEDIR} COMPONENT dev)

# pkg-config, for builds without CMake; the prefix is found from the .pc file's own place.
file(RELATIVE_PATH EMBER_PC_TO_PREFIX /P/${CMAKE_INSTALL_LIBDIR}/pkgconfig /P)
foreach(pc ember ember-plugin-sdk)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT dev)
endforeach()

# Everything the install rules and packages hold, for tools/package.sh to build.
list(TRANSFORM EMBER_BACKENDS PREPEND ember-plugin- OUTPUT_VARIABLE ember_backend_targets)
add_custom_target(ember_installables DEPENDS ember_core ember ember_graph ember_cli
                                              ${ember_backend_targets})

include(${CMAKE_CURRENT_LIST_DIR}/EmberPackage.cmake)
