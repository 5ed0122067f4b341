#include "backend/select/device_backends.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "backend/backend_registry.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

#if defined(WIOLA_CUDA_PLUGIN)
#include "backend/select/cuda_plugin.hpp"
#endif

namespace wiola {

namespace fs = std::filesystem;

std::vector<std::string> cuda_plugin_candidates() {
  if (const char* env = std::getenv("WIOLA_CUDA_PLUGIN"); env && *env) return {env};
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path();
    for (const fs::path& d : {dir, dir / ".." / "lib" / "wiola", dir / ".." / "lib"})
      out.push_back((d / "libwiola_cuda.so").lexically_normal().string());
  }
#if defined(WIOLA_CUDA_PLUGIN_BUILD_PATH)
  out.push_back(WIOLA_CUDA_PLUGIN_BUILD_PATH);
#endif
  return out;
}

#if defined(WIOLA_CUDA_PLUGIN)
namespace {

// The plugin, loaded once; `error` says why not when it could not be.
struct LoadedPlugin {
  CudaPluginExports exports;
  std::string path;
  std::string error;
};

LoadedPlugin load_plugin() {
  LoadedPlugin p;
  const std::vector<std::string> candidates = cuda_plugin_candidates();
  std::string searched;
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) {
      p.path = c;
      break;
    }
    searched += (searched.empty() ? "" : ", ") + c;
  }
  if (p.path.empty()) {
    p.error = std::string("the CUDA backend ") + kCudaPluginFile + " was not found (looked at " +
              searched + "; WIOLA_CUDA_PLUGIN names it)";
    return p;
  }
  // RTLD_NOW: a missing CUDA library or symbol is reported here, by name,
  // not at the first call. The handle is kept for the life of the process.
  void* handle = dlopen(p.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    p.error = "cannot load the CUDA backend " + p.path + ": " + (why ? why : "unknown error");
    return p;
  }
  auto entry = reinterpret_cast<CudaPluginEntryFn>(dlsym(handle, kCudaPluginEntry));
  if (!entry) {
    p.error = p.path + " is not a wiola CUDA plugin: it has no " + kCudaPluginEntry;
    return p;
  }
  entry(&p.exports);
  if (p.exports.abi != kCudaPluginAbi || !p.exports.code_version ||
      code_version() != p.exports.code_version) {
    p.error = p.path + " is from another build (" +
              (p.exports.code_version ? p.exports.code_version : "no version") +
              ", plugin interface " + std::to_string(p.exports.abi) + ") than this program (" +
              code_version() + ", interface " + std::to_string(kCudaPluginAbi) +
              "): use the plugin built with it";
    p.exports = {};
    return p;
  }
  if (p.exports.device_groups) comm::install_device_groups_maker(p.exports.device_groups);
  return p;
}

const LoadedPlugin& plugin() {
  static std::once_flag once;
  static LoadedPlugin loaded;
  std::call_once(once, [] { loaded = load_plugin(); });
  return loaded;
}

}  // namespace
#endif

void register_device_backends() {
#if defined(WIOLA_CUDA_PLUGIN)
  // Each question loads the plugin first; where it cannot be loaded, no
  // device is usable and the reason names what is missing.
  register_device_backend(
      {Device::CUDA, "cuda",
       [] { return plugin().error.empty() ? plugin().exports.backend.device_count() : 0; },
       [] {
         return plugin().error.empty() ? plugin().exports.backend.unavailable_reason()
                                       : plugin().error;
       },
       [](int index) -> std::unique_ptr<Backend> {
         require(plugin().error.empty(), "--device cuda: ", plugin().error);
         return plugin().exports.backend.make(index);
       },
       [](int index) { return plugin().exports.backend.device_id(index); }});
#endif
}

}  // namespace wiola
