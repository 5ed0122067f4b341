// The peer watch: which ranks share this host, and whether they still live.
// Under srun a killed rank is not noticed by the survivors' MPI (shared-memory
// transport; Slurm then sends them SIGTERM and, KillWait later, SIGKILL), so
// a rank that waits on peers looks for them in /proc.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/mpi_internal.hpp"

namespace wiola::comm::detail {

namespace {

struct Peer {
  int world_rank;
  long long pid;
  unsigned long long start;  // clock ticks after boot (/proc/PID/stat field 22)
};

std::vector<Peer>& watched() {
  static std::vector<Peer> peers;
  return peers;
}

std::vector<std::string>& hosts() {
  static std::vector<std::string> by_world_rank;
  return by_world_rank;
}

// Every rank's host name, gathered once so that messages can name a rank's node.
void gather_hosts(int size) {
  const std::string& mine = identity().host;
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  mine.copy(name, sizeof name - 1);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  check_global(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                             MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD),
               "MPI_Allgather (host names)");
  hosts().clear();
  for (int r = 0; r < size; ++r) {
    const char* h = &all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME];
    hosts().emplace_back(h, ::strnlen(h, MPI_MAX_PROCESSOR_NAME));
  }
}

// State letter and start time of a process from /proc/PID/stat; false when
// there is no such process.
bool read_stat(long long pid, char& state, unsigned long long& start) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%lld/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces and ')'
  if (!p) return false;
  // After ") ": state (field 3), then fields 4..21, then starttime (22).
  char st = 0;
  unsigned long long s = 0;
  if (std::sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &st, &s) != 2)
    return false;
  state = st;
  start = s;
  return true;
}

std::uint64_t host_hash(const std::string& host) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : host) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

void watch_local_peers() {
  const Identity& me = identity();
  int size = 0;
  check_global(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  gather_hosts(size);
  char state = 0;
  unsigned long long start = 0;
  const long long pid = ::getpid();
  // Without /proc this rank can neither watch nor be watched (PID 0 is never
  // watched), but it still joins the gather, which every rank enters.
  const bool proc = read_stat(pid, state, start);
  const unsigned long long mine[3] = {host_hash(me.host), proc ? static_cast<unsigned long long>(pid) : 0,
                                      start};
  std::vector<unsigned long long> all(3 * static_cast<std::size_t>(size));
  check_global(MPI_Allgather(mine, 3, MPI_UNSIGNED_LONG_LONG, all.data(), 3,
                             MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD),
               "MPI_Allgather (peer watch)");
  std::vector<Peer>& peers = watched();
  peers.clear();
  for (int r = 0; r < size; ++r) {
    const unsigned long long* e = &all[3 * static_cast<std::size_t>(r)];
    if (!proc || r == me.world_rank || e[0] != mine[0] || e[1] == 0) continue;
    // Watched only when this process sees it as it is (same PID namespace).
    char s = 0;
    unsigned long long t = 0;
    if (read_stat(static_cast<long long>(e[1]), s, t) && t == e[2])
      peers.push_back({r, static_cast<long long>(e[1]), e[2]});
  }
}

std::string dead_local_peer() {
  for (const Peer& p : watched()) {
    char state = 0;
    unsigned long long start = 0;
    const bool there = read_stat(p.pid, state, start) && start == p.start;
    if (!there || state == 'Z' || state == 'X')
      return "rank " + std::to_string(p.world_rank) + " (pid " + std::to_string(p.pid) +
             " on this host) has died";
  }
  return "";
}

std::string host_of(int world_rank) {
  const std::vector<std::string>& h = hosts();
  if (world_rank < 0 || static_cast<std::size_t>(world_rank) >= h.size()) return "";
  return h[static_cast<std::size_t>(world_rank)];
}

}  // namespace wiola::comm::detail
