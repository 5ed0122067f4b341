// Linked into every GoogleTest executable of the suite: turns on the CPU
// backend's NaN poisoning of alloc_uninit before any test runs (unless the
// caller set WIOLA_POISON_UNINIT already). See tests/CMakeLists.txt.
#include <cstdlib>

namespace {

const bool poison_set = [] { return ::setenv("WIOLA_POISON_UNINIT", "1", 0) == 0; }();

}  // namespace
