// The unique-id exchange of NCCL communicators (see the header).
#include "comm/unique_id.hpp"

#include "core/error.hpp"

namespace wiola::comm {

std::vector<std::byte> exchange_unique_ids(Communicator& group, std::size_t count,
                                           std::size_t id_bytes, const IdMaker& make) {
  require(id_bytes > 0, "comm '", group.name(), "': unique ids of 0 bytes");
  std::vector<std::byte> ids(count * id_bytes);
  if (group.rank() == 0)
    for (std::size_t i = 0; i < count; ++i)
      make(std::span<std::byte>(ids).subspan(i * id_bytes, id_bytes));
  group.broadcast(ids.data(), ids.size(), 0);
  return ids;
}

}  // namespace wiola::comm
