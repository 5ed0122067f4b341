#pragma once
// The bootstrap of NCCL communicators over MPI: rank 0 of the group makes the
// unique id(s), and a broadcast on the MPI communicator of the same group
// delivers them to every member. Any MPI launch (mpirun, srun) works: no
// other rendezvous (no shared file, no environment variable) is needed.
//
// Kept apart from NCCL (the maker is a function) so that the exchange is
// tested in every build.
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "comm/communicator.hpp"

namespace wiola::comm {

// Fills one id of `id_bytes` bytes; called on group rank 0 only.
using IdMaker = std::function<void(std::span<std::byte> id)>;

// Collective over `group` (host memory): `count` ids made on rank 0, the same
// bytes on every member afterwards, id i at [i * id_bytes, (i + 1) * id_bytes).
std::vector<std::byte> exchange_unique_ids(Communicator& group, std::size_t count,
                                           std::size_t id_bytes, const IdMaker& make);

}  // namespace wiola::comm
