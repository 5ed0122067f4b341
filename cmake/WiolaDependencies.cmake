# Every dependency comes from Debian's packages (tools/install-deps.sh installs them).
find_package(MPI REQUIRED COMPONENTS C)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(Boost REQUIRED COMPONENTS program_options)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)
# CRC-32 of checkpoint files (zlib1g-dev).
find_package(ZLIB REQUIRED)
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

# CUDA: optional, auto-detected. Nothing in the CPU build depends on it.
set(WIOLA_HAVE_CUDA OFF)
if(NOT WIOLA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(WIOLA_HAVE_CUDA ON)
  elseif(WIOLA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "WIOLA_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "wiola: CUDA backend ${WIOLA_HAVE_CUDA}")
