// MpiCommunicator: point-to-point, groups, and the communicator's shape.
// Collectives are in mpi_collectives.cpp.
#include <climits>
#include <cstdio>

#include "comm/mpi_internal.hpp"
#include "core/error.hpp"

namespace wiola::comm {

using detail::die;

// ---- Impl ---------------------------------------------------------------------

std::unique_ptr<MpiCommunicator::Impl> MpiCommunicator::Impl::wrap(MPI_Comm c, std::string name,
                                                                   bool own, double timeout,
                                                                   std::size_t chunk_limit) {
  auto impl = std::make_unique<Impl>();
  impl->comm = c;
  impl->owned = own;
  impl->name = std::move(name);
  impl->timeout = timeout;
  impl->chunk_limit = chunk_limit;
  impl->check(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  impl->check(MPI_Comm_rank(c, &impl->rank), "MPI_Comm_rank");
  impl->check(MPI_Comm_size(c, &impl->size), "MPI_Comm_size");
  // MPI_TAG_UB is cached on MPI_COMM_WORLD only; every communicator shares it.
  void* attr = nullptr;
  int flag = 0;
  detail::check_global(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag),
                       "MPI_Comm_get_attr(MPI_TAG_UB)");
  if (flag && attr) impl->tag_ub = *static_cast<int*>(attr);

  MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  impl->check(MPI_Comm_group(c, &mine), "MPI_Comm_group");
  impl->check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group(world)");
  std::vector<int> local(impl->size);
  for (int r = 0; r < impl->size; ++r) local[r] = r;
  impl->world_ranks.assign(impl->size, -1);
  impl->check(
      MPI_Group_translate_ranks(mine, impl->size, local.data(), world, impl->world_ranks.data()),
      "MPI_Group_translate_ranks");
  impl->check(MPI_Group_free(&mine), "MPI_Group_free");
  impl->check(MPI_Group_free(&world), "MPI_Group_free");
  return impl;
}

MpiCommunicator::Impl::~Impl() {
  if (!owned || comm == MPI_COMM_NULL) return;
  int finalized = 0;
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;  // too late to free
  check(MPI_Comm_free(&comm), "MPI_Comm_free");
}

std::string MpiCommunicator::Impl::peer(int r) const {
  std::string s = "rank " + std::to_string(r);
  if (r < 0 || r >= size) return s;
  std::vector<std::string> notes;
  if (world_ranks[r] != r) notes.push_back("world " + std::to_string(world_ranks[r]));
  const std::string host = detail::host_of(world_ranks[r]);
  if (!host.empty() && host != detail::identity().host) notes.push_back("host " + host);
  if (notes.size() == 1) s += " (" + notes[0] + ")";
  if (notes.size() == 2) s += " (" + notes[0] + ", " + notes[1] + ")";
  return s;
}

std::string MpiCommunicator::Impl::remote_members() const {
  constexpr int kListed = 8;
  std::string s;
  int listed = 0, more = 0;
  for (int w : world_ranks) {
    const std::string host = detail::host_of(w);
    if (host.empty() || host == detail::identity().host) continue;
    if (listed == kListed) {
      ++more;
      continue;
    }
    s += (listed++ ? ", world " : "world ") + std::to_string(w) + " on " + host;
  }
  if (more) s += " and " + std::to_string(more) + " more";
  return s;
}

void MpiCommunicator::Impl::fail_call(int rc, const std::string& what) const {
  fail(what, "failed: " + detail::mpi_error_string(rc), kAbortMpiError);
}

void MpiCommunicator::Impl::fail(const std::string& what, const std::string& why, int code) const {
  die(what + " on '" + name + "' " + why, code);
}

// ---- MpiCommunicator ------------------------------------------------------------

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MpiCommunicator::~MpiCommunicator() = default;

int MpiCommunicator::rank() const { return impl_->rank; }
int MpiCommunicator::size() const { return impl_->size; }
const std::string& MpiCommunicator::name() const { return impl_->name; }
int MpiCommunicator::max_tag() const { return impl_->tag_ub; }
bool MpiCommunicator::reads_device_memory() const { return detail::device_aware_mpi(); }

void MpiCommunicator::set_timeout(double seconds) {
  require(seconds >= 0, "comm '", impl_->name, "': timeout must be >= 0 s, got ", seconds);
  impl_->timeout = seconds;
}
double MpiCommunicator::timeout() const { return impl_->timeout; }

void MpiCommunicator::set_chunk_limit(std::size_t elements) {
  require(elements >= 1 && elements <= static_cast<std::size_t>(INT_MAX), "comm '", impl_->name,
          "': chunk limit must be in [1, INT_MAX], got ", elements);
  impl_->chunk_limit = elements;
}
std::size_t MpiCommunicator::chunk_limit() const { return impl_->chunk_limit; }

namespace {

void check_peer(const MpiCommunicator::Impl& c, int peer, int tag, const char* role) {
  require(peer >= 0 && peer < c.size, "comm '", c.name, "': ", role, " rank ", peer,
          " is out of range (size ", c.size, ")");
  require(tag >= 0 && tag <= c.tag_ub, "comm '", c.name, "': tag ", tag, " is out of range [0, ",
          c.tag_ub, "]");
}

}  // namespace

std::unique_ptr<Request> MpiCommunicator::post_send(ConstBuffer buf, std::size_t bytes, int dst,
                                                    int tag) {
  check_peer(*impl_, dst, tag, "destination");
  auto req = std::make_unique<MpiRequest>(
      impl_, "MPI_Isend to " + impl_->peer(dst) + " tag " + std::to_string(tag));
  req->set_peer(dst);
  const auto* p = static_cast<const std::byte*>(buf.data);
  // Pieces of one message share the tag; MPI keeps them in order.
  detail::for_each_piece(bytes, impl_->chunk_limit, [&](std::size_t off, int n) {
    MPI_Request r = MPI_REQUEST_NULL;
    impl_->check(MPI_Isend(p + off, n, MPI_BYTE, dst, tag, impl_->comm, &r), req->what());
    req->add(r);
  });
  return req;
}

std::unique_ptr<Request> MpiCommunicator::post_recv(Buffer buf, std::size_t bytes, int src, int tag) {
  check_peer(*impl_, src, tag, "source");
  auto req = std::make_unique<MpiRequest>(
      impl_, "MPI_Irecv from " + impl_->peer(src) + " tag " + std::to_string(tag));
  req->set_peer(src);
  auto* p = static_cast<std::byte*>(buf.data);
  detail::for_each_piece(bytes, impl_->chunk_limit, [&](std::size_t off, int n) {
    MPI_Request r = MPI_REQUEST_NULL;
    impl_->check(MPI_Irecv(p + off, n, MPI_BYTE, src, tag, impl_->comm, &r), req->what());
    req->add(r, n);
  });
  return req;
}

std::unique_ptr<Communicator> MpiCommunicator::make_split(int color, int key,
                                                          std::string new_name) {
  // MPI_Comm_split blocks with no timeout; a barrier under the watchdog first
  // means a missing rank is reported instead of hanging here.
  barrier();
  MPI_Comm out = MPI_COMM_NULL;
  impl_->check(MPI_Comm_split(impl_->comm, color < 0 ? MPI_UNDEFINED : color, key, &out),
               "MPI_Comm_split into '" + new_name + "'");
  if (out == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(
      Impl::wrap(out, std::move(new_name), true, impl_->timeout, impl_->chunk_limit));
}

void MpiCommunicator::abort(const std::string& why, int code) { die(why, code); }

}  // namespace wiola::comm
