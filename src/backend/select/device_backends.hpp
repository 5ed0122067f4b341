#pragma once
// Registers every device backend this build has (backend_registry.hpp). The
// tools call it once at start; in a build without CUDA it registers nothing.
namespace wiola {
void register_device_backends();
}
