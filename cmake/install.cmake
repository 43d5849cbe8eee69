# make install: the library, headers, the herd binary, a pkg-config file
# and a CMake package config (find_package(herd)).
include(CMakePackageConfigHelpers)
install(TARGETS herd herd_static EXPORT herdTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/herd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT herdTargets NAMESPACE herd::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
configure_package_config_file(cmake/herdConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/herdConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/herdConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/herdConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/herdConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
set(HERD_PC_NCCL_LIBS "")
if(HERD_HAVE_NCCL)
  get_filename_component(_nccl_dir ${NCCL_LIBRARY} DIRECTORY)
  set(HERD_PC_NCCL_LIBS "-L${_nccl_dir} -L${CUDAToolkit_LIBRARY_DIR} -lnccl -lcudart")
endif()
# The static library's other engine: MPI's C library, in the same line.
if(HERD_HAVE_MPI)
  foreach(_lib IN LISTS MPI_C_LIBRARIES)
    get_filename_component(_mpi_dir ${_lib} DIRECTORY)
    get_filename_component(_mpi_name ${_lib} NAME_WE)
    string(REGEX REPLACE "^lib" "" _mpi_name ${_mpi_name})
    string(APPEND HERD_PC_NCCL_LIBS " -L${_mpi_dir} -l${_mpi_name}")
  endforeach()
endif()
configure_file(cmake/herd.pc.in ${CMAKE_CURRENT_BINARY_DIR}/herd.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/herd.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The same from the build tree, for trying the API before installing:
# PKG_CONFIG_PATH=<build> pkg-config --cflags --libs herd finds
# herd-uninstalled.pc, and find_package(herd) with herd_DIR=<build> (or the
# build directory on CMAKE_PREFIX_PATH) finds herdConfig.cmake beside the
# exported build-tree targets.
configure_file(cmake/herd-uninstalled.pc.in
               ${PROJECT_BINARY_DIR}/herd-uninstalled.pc @ONLY)
export(EXPORT herdTargets NAMESPACE herd::
       FILE ${PROJECT_BINARY_DIR}/herdTargets.cmake)
