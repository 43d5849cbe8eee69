# Find MPI (Open MPI: Debian's libopenmpi-dev) for the mpi engine.
# HERD_WITH_MPI: AUTO builds it when MPI's C bindings are found (with a
# one-line notice otherwise), ON fails without them, OFF leaves it out.
# CMake's FindMPI gives the imported target MPI::MPI_C and mpiexec
# (MPIEXEC_EXECUTABLE), which the mpi_* suites start their jobs with.
set(HERD_HAVE_MPI OFF)
if(NOT HERD_WITH_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(HERD_HAVE_MPI ON)
    message(STATUS "herd: MPI engine enabled (MPI ${MPI_C_VERSION}, "
            "${MPIEXEC_EXECUTABLE})")
  elseif(HERD_WITH_MPI STREQUAL "ON")
    message(FATAL_ERROR "herd: HERD_WITH_MPI=ON but MPI was not found "
            "(Debian: apt-get install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "herd: MPI not found, the mpi engine is left out")
  endif()
endif()
