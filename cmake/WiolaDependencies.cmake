# Every dependency comes from Debian's packages (tools/install-deps.sh installs them).
find_package(MPI REQUIRED COMPONENTS C)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(Boost REQUIRED COMPONENTS program_options)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)
# CRC-32 of checkpoint files and gzip-compressed text inputs (zlib1g-dev);
# zstd-compressed text inputs (libzstd-dev).
find_package(ZLIB REQUIRED)
find_package(zstd REQUIRED CONFIG)
# The data tools: NFC normalisation and character classes for the BPE tokenizer
# (libicu-dev), and JSON-lines input (nlohmann-json3-dev, header-only).
find_package(ICU REQUIRED COMPONENTS uc data)
find_package(nlohmann_json 3 REQUIRED)
# OpenBLAS built for OpenMP (Debian's libopenblas-openmp-dev), so BLAS and
# wiola's own OpenMP loops share one thread pool. With the pthread build the
# two pools' idle threads spin against each other and two threads run slower
# than one.
find_library(WIOLA_OPENBLAS_LIB openblas
  PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
find_path(WIOLA_CBLAS_INCLUDE cblas.h
  PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
if(NOT WIOLA_OPENBLAS_LIB OR NOT WIOLA_CBLAS_INCLUDE)
  message(FATAL_ERROR "OpenBLAS for OpenMP not found: run tools/install-deps.sh "
                      "(Debian package libopenblas-openmp-dev)")
endif()
message(STATUS "wiola: BLAS ${WIOLA_OPENBLAS_LIB}")
if(WIOLA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

add_library(wiola_hdf5 INTERFACE)
target_include_directories(wiola_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_link_libraries(wiola_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
target_compile_definitions(wiola_hdf5 INTERFACE ${HDF5_DEFINITIONS})

add_library(wiola_blas INTERFACE)
target_include_directories(wiola_blas SYSTEM INTERFACE ${WIOLA_CBLAS_INCLUDE})
target_link_libraries(wiola_blas INTERFACE ${WIOLA_OPENBLAS_LIB} OpenMP::OpenMP_CXX)

# CUDA: the CUDA backend (src/backend/cuda) is built when nvcc is found
# (WIOLA_CUDA=AUTO), always (ON: missing nvcc is an error) or never (OFF).
# Nothing in the CPU build depends on it; the emulated tests of its kernels
# (tests/cuda_emu) run in every build.
set(WIOLA_WITH_CUDA OFF)
if(NOT WIOLA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(WIOLA_WITH_CUDA ON)
  elseif(WIOLA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "WIOLA_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
if(WIOLA_WITH_CUDA)
  # Hopper (H100/H200) and Ampere (A100) by default; -DCMAKE_CUDA_ARCHITECTURES=... for others.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90 80)
  endif()
  enable_language(CUDA)
  # CMake 3.25 predates nvcc 12's C++20 support; tell it the flag.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  # NCCL ships with the toolkit here; elsewhere set NCCL_ROOT.
  find_path(WIOLA_NCCL_INCLUDE nccl.h HINTS ${NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
  find_library(WIOLA_NCCL_LIB nccl HINTS ${NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR})
endif()
message(STATUS "wiola: CUDA backend ${WIOLA_WITH_CUDA} (architectures ${CMAKE_CUDA_ARCHITECTURES})")
# NCCL: the communicator for device buffers (comm/nccl_communicator.hpp). Without
# it a CUDA build moves device buffers over MPI with host staging.
set(WIOLA_WITH_NCCL OFF)
if(WIOLA_WITH_CUDA AND WIOLA_NCCL_INCLUDE AND WIOLA_NCCL_LIB)
  set(WIOLA_WITH_NCCL ON)
endif()
message(STATUS "wiola: NCCL ${WIOLA_WITH_NCCL} (${WIOLA_NCCL_LIB})")
