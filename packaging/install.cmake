# Installation and packaging: `cmake --install build [--prefix P]` and `cpack -G DEB` in build/.
# Layout follows the FHS/GNU dirs: the binary in bin/, the capture script and the testbed
# wrapper in libexec/redsim/, presets, traces and schemas in share/redsim/, docs in
# share/doc/redsim/, the bash completion where bash-completion looks for it.
include(GNUInstallDirs)

# Keep the link-time runpath (CUDA/NCCL outside the default paths when built with them): CMake
# cannot rewrite the build RUNPATH to an empty one in place.
set_target_properties(redsim PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS redsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS traces/capture/redsim_capture.py traces/capture/redsim_profile_ddp.py realexec/testbed DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/redsim)
# The capture's modules, which redsim_capture.py imports from its own directory.
install(DIRECTORY traces/capture/capture_lib DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/redsim PATTERN "__pycache__" EXCLUDE)

set(REDSIM_SHARE ${CMAKE_INSTALL_DATADIR}/redsim)
# Cluster presets with their schema and sources, example tuned configs.
install(DIRECTORY configs/ DESTINATION ${REDSIM_SHARE}/configs)
# Bundled model traces with their schema (the capture script lives in libexec).
install(DIRECTORY traces/ DESTINATION ${REDSIM_SHARE}/traces PATTERN "capture" EXCLUDE)
install(FILES traces/capture/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME capture.md)

install(FILES README.md LICENSE CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES docs/ARCHITECTURE.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES tune/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/tune RENAME README.md)
install(FILES sim/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/sim)
install(FILES realexec/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/realexec)
install(FILES collectives/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/collectives)

install(FILES packaging/redsim.bash-completion DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME redsim)

# A Debian package of the above: cpack -G DEB (in the build directory).
set(CPACK_PACKAGE_NAME redsim)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "redsim maintainers <redsim@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "simulator and autotuner for data-parallel gradient reduction (DDP, ZeRO, FSDP)")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # libsimgrid, libgloo, ... from the binary's links
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, bash-completion")
include(CPack)
