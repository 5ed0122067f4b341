# Build options, compiler flags and sanitizers.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

option(WIOLA_BUILD_TESTS "Build the GoogleTest suites" ON)
option(WIOLA_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(WIOLA_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; ASan+UBSan throughout)" OFF)
option(WIOLA_WERROR "Treat warnings in wiola's own code as errors" OFF)
set(WIOLA_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE WIOLA_CUDA PROPERTY STRINGS AUTO ON OFF)

# Flags for wiola's own targets (not for third-party code).
add_library(wiola_flags INTERFACE)
target_compile_options(wiola_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wpedantic>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${WIOLA_WERROR}>>:-Werror>)
target_compile_features(wiola_flags INTERFACE cxx_std_20)
# nvcc: the same warnings from the host compiler, and nvcc's own as errors.
target_compile_options(wiola_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${WIOLA_WERROR}>>:--Werror=all-warnings -Xcompiler=-Werror>)
if(WIOLA_SANITIZE)
  # -O1 with line tables (-g1) is what the sanitizers need for their reports;
  # -O3 -g took 2.5x as long to compile for no finding it would add (the
  # sanitizer build was the largest phase of the suite).
  target_compile_options(wiola_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-O1 -g1 -march=x86-64-v2 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(wiola_flags INTERFACE -fsanitize=address,undefined)
elseif(CMAKE_BUILD_TYPE STREQUAL "Release" OR CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
  # -O3 lets GCC vectorise the elementwise kernels; no -ffast-math, the CPU
  # backend is the exact reference.
  target_compile_options(wiola_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-O3 -march=x86-64-v2>)
endif()

# The fuzz build (tools/fuzz.sh): every wiola object carries libFuzzer's
# coverage hooks and both sanitizers; the fuzz targets link libFuzzer itself.
if(WIOLA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "-DWIOLA_FUZZ=ON needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++, as tools/fuzz.sh does")
  endif()
  target_compile_options(wiola_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g>)
  target_link_options(wiola_flags INTERFACE -fsanitize=address,undefined)
endif()
