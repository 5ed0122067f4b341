#pragma once
// Device staging for a communicator whose transport reads only host memory:
// the backend that owns the device memory copies it to and from the host.
#include "backend/backend.hpp"
#include "comm/communicator.hpp"

namespace wiola {

class BackendStaging final : public comm::DeviceStaging {
 public:
  explicit BackendStaging(Backend& backend) : backend_(backend) {}
  void to_host(const void* device_src, void* host_dst, std::size_t bytes) override {
    backend_.copy_to_host(device_src, host_dst, bytes);
  }
  void to_device(const void* host_src, void* device_dst, std::size_t bytes) override {
    backend_.copy_from_host(host_src, device_dst, bytes);
  }

 private:
  Backend& backend_;
};

}  // namespace wiola
