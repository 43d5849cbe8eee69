# Find CUDA + NCCL for the GPU engine. HERD_WITH_NCCL: AUTO builds it when
# both are found (with a one-line notice otherwise), ON fails without them,
# OFF leaves it out.
set(HERD_HAVE_NCCL OFF)
set(HERD_NCCL_LIBS)
if(NOT HERD_WITH_NCCL STREQUAL "OFF")
  set(_cuda_hint /usr/local/cuda)
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} ${_cuda_hint}/include
                  $ENV{NCCL_HOME}/include)
  find_library(NCCL_LIBRARY nccl
               HINTS ${CUDAToolkit_LIBRARY_DIR} ${_cuda_hint}/lib64
                     $ENV{NCCL_HOME}/lib)
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(HERD_HAVE_NCCL ON)
    # The engine's kernels (spin, reduce) are CUDA sources built by nvcc.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
    endif()
    enable_language(CUDA)
    set(HERD_NCCL_LIBS CUDA::cudart ${NCCL_LIBRARY})
    message(STATUS "herd: NCCL engine enabled (${NCCL_LIBRARY})")
  elseif(HERD_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "herd: HERD_WITH_NCCL=ON but the CUDA Toolkit or "
            "NCCL was not found (set CUDAToolkit_ROOT or NCCL_HOME)")
  else()
    message(STATUS "herd: CUDA/NCCL not found, the nccl engine is left out")
  endif()
endif()
