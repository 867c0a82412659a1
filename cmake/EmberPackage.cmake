# Debian packages, one per install component (tools/package.sh runs cpack into build/packages/).
# Installing only the packages a machine needs is how a deployment picks its backends: a CPU
# server gets ember-backend-cpu, a GPU server adds ember-backend-cuda. Library dependencies of
# every package are computed by dpkg-shlibdeps (libember0's include zlib1g and libzip4, which
# tests/install/run.sh checks); the dependencies between Ember's own packages are declared here.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ember)
set(CPACK_PACKAGE_VENDOR "The Ember developers")
# The Maintainer field of every package, and the contact in their copyright files; a distributor
# who rebuilds the packages sets their own.
set(EMBER_PACKAGE_MAINTAINER "The Ember developers <maintainers@ember-runtime.org>"
    CACHE STRING "Maintainer of Ember's Debian packages (name <address>)")
set(CPACK_PACKAGE_CONTACT "${EMBER_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "eager deep-learning runtime with backend plugins")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/cpack)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # libember0's shlibs file, for packages built on it
set(CPACK_STRIP_FILES ON)
# libember_core.so.0 is found here while the packages that hold it are being made.
# So is the oneDNN the CPU backend's package ships.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}
    ${EMBER_ONEDNN_DIR}/lib)

set(CPACK_COMPONENTS_ALL runtime dev tools)
foreach(backend ${EMBER_BACKENDS})
  list(APPEND CPACK_COMPONENTS_ALL backend_${backend})
endforeach()
set(ember_exact "(= ${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE})")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libember${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "ember-backend-cpu")
# Note [What every package carries]: the ldconfig trigger, and maintainer scripts that replace
# CPack's (which call ldconfig for anything under /usr/lib, plugins included).
set(ember_deb_scripts ${CMAKE_CURRENT_LIST_DIR}/deb/postinst ${CMAKE_CURRENT_LIST_DIR}/deb/postrm)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/deb/triggers ${ember_deb_scripts})
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "Ember runtime libraries\nlibember_core (tensors, ops, autograd, plugin loader), libember\n(nn, optim, data, io, models) and libember_graph (graphs, ONNX import). Backends come in\nthe ember-backend-* packages.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libember-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libember${PROJECT_VERSION_MAJOR} ${ember_exact}, libfmt-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "Ember development files\nHeaders (<ember/...>), the CMake package (find_package(Ember)),\npkg-config files and the plugin SDK with ember_add_plugin().")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ember-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libember${PROJECT_VERSION_MAJOR} ${ember_exact}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "ember-backend-cpu")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
    "Ember command line\nember devices, plugins, ops, conformance and train.")

set(backend_cpu_summary "CPU backend (oneDNN and vectorized OpenMP loops)")
set(backend_reference_summary "reference backend (plain float64-accumulating loops, the oracle)")
set(backend_gloo_summary "gloo communication backend (collectives over TCP, CPU tensors)")
set(backend_mpi_summary "mpi communication backend (Open MPI, for jobs started by mpirun or srun)")
set(backend_nccl_summary "nccl communication backend (NCCL collectives on CUDA tensors)")
set(backend_cuda_summary "CUDA backend (cuBLAS, cuDNN and own kernels)")
foreach(backend ${EMBER_BACKENDS})
  string(TOUPPER backend_${backend} comp)
  set(CPACK_DEBIAN_${comp}_PACKAGE_NAME ember-backend-${backend})
  set(CPACK_DEBIAN_${comp}_PACKAGE_SECTION science)
  set(CPACK_DEBIAN_${comp}_PACKAGE_CONTROL_EXTRA ${ember_deb_scripts})
  set(CPACK_DEBIAN_${comp}_PACKAGE_DEPENDS "libember${PROJECT_VERSION_MAJOR} (>= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_${comp}_DESCRIPTION
      "Ember ${backend_${backend}_summary}\nA plugin in Ember's plugin directory; found at start-up.")
endforeach()
# dpkg-shlibdeps gives the CPU backend "liblapack3 | liblapack.so.3"; the LAPACK it is meant to run
# on is OpenBLAS's OpenMP build (Note [LAPACK in the CPU backend] in backends/cpu/ops/linalg.cpp).
set(CPACK_DEBIAN_BACKEND_CPU_PACKAGE_DEPENDS
    "libember${PROJECT_VERSION_MAJOR} (>= ${PROJECT_VERSION}), libopenblas0-openmp")
# Jobs of the mpi backend are started by mpirun, which Debian ships apart from the library.
set(CPACK_DEBIAN_BACKEND_MPI_PACKAGE_RECOMMENDS "openmpi-bin")
# The CUDA libraries come from NVIDIA's distribution, not from Debian packages that
# dpkg-shlibdeps could name: they are recommended, and the plugin reports which one is missing.
if(TARGET ember-plugin-cuda)
  set(CPACK_DEBIAN_BACKEND_CUDA_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_BACKEND_CUDA_PACKAGE_DEPENDS
      "libember${PROJECT_VERSION_MAJOR} (>= ${PROJECT_VERSION}), libc6, libstdc++6, libgcc-s1")
  set(CPACK_DEBIAN_BACKEND_CUDA_PACKAGE_RECOMMENDS "cuda-cudart-13-0, libcudnn9-cuda-13")
endif()
if(TARGET ember-plugin-nccl)  # NCCL and the CUDA runtime come from NVIDIA's distribution too
  set(CPACK_DEBIAN_BACKEND_NCCL_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_BACKEND_NCCL_PACKAGE_DEPENDS
      "libember${PROJECT_VERSION_MAJOR} (>= ${PROJECT_VERSION}), libc6, libstdc++6, libgcc-s1")
  set(CPACK_DEBIAN_BACKEND_NCCL_PACKAGE_RECOMMENDS "cuda-cudart-13-0, libnccl2")
endif()

# Note [What every package carries]
# Debian policy (and lintian) asks every binary package for /usr/share/doc/<package>/copyright, a
# machine-readable (DEP-5) statement of its licence, and changelog.Debian.gz. Both are made here
# at configure time from cmake/deb/ and installed with each component, so `cmake --install` lays
# them out too. The CPU backend's copyright adds a paragraph for the oneDNN it ships. The
# changelog is compressed with gzip -9n: no name or time stamp in the header, so rebuilding gives
# the same bytes. oneDNN's library comes from its wheel unstripped; it is stripped when installed
# for a package (CPACK_STRIP_FILES strips only what install(TARGETS) installs). Maintainer
# scripts: libember0's libraries reach the linker cache through an ldconfig trigger
# (cmake/deb/triggers). CPack would give every package with a library under /usr/lib, plugins
# included, a postinst and postrm calling ldconfig, which run the host's ldconfig when a package
# is installed into another root (dpkg --root, chroot-less); Ember's scripts, which do nothing,
# replace them.
set(ember_component_packages
    runtime ${CPACK_DEBIAN_RUNTIME_PACKAGE_NAME} dev ${CPACK_DEBIAN_DEV_PACKAGE_NAME}
    tools ${CPACK_DEBIAN_TOOLS_PACKAGE_NAME})
foreach(backend ${EMBER_BACKENDS})
  list(APPEND ember_component_packages backend_${backend} ember-backend-${backend})
endforeach()
file(READ ${CMAKE_CURRENT_LIST_DIR}/deb/onednn-copyright.in ember_onednn_copyright)
string(CONFIGURE "${ember_onednn_copyright}" ember_onednn_copyright @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/changelog.in ${PROJECT_BINARY_DIR}/deb/changelog.Debian
               @ONLY)
execute_process(COMMAND gzip -9nc ${PROJECT_BINARY_DIR}/deb/changelog.Debian
                OUTPUT_FILE ${PROJECT_BINARY_DIR}/deb/changelog.Debian.gz COMMAND_ERROR_IS_FATAL ANY)
while(ember_component_packages)
  list(POP_FRONT ember_component_packages component package)
  set(EMBER_DEB_EXTRA_COPYRIGHT "")
  if(component STREQUAL "backend_cpu")
    set(EMBER_DEB_EXTRA_COPYRIGHT "${ember_onednn_copyright}")
  endif()
  configure_file(${CMAKE_CURRENT_LIST_DIR}/deb/copyright.in ${PROJECT_BINARY_DIR}/deb/${package}/copyright
                 @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/deb/${package}/copyright ${PROJECT_BINARY_DIR}/deb/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package} COMPONENT ${component})
endwhile()
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${EMBER_INSTALL_PLUGINDIR}/cpu/libdnnl.so.3\"
    COMMAND_ERROR_IS_FATAL ANY)
endif()" COMPONENT backend_cpu)

include(CPack)
