// Collectives over MPI: allreduce, uneven reduce-scatter and allgather (also
// in place and split into rounds), broadcast, barrier, argument errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "mpi_test_env.hpp"

namespace wiola::comm::test {
namespace {

template <class T>
class mpiCollectives : public ::testing::Test {};
using Types = ::testing::Types<float, double, std::int32_t>;
TYPED_TEST_SUITE(mpiCollectives, Types);

// Element i of rank r's input: (r + 1) * (i + 1), exact in every type.
template <class T>
std::vector<T> input(int rank, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = T((rank + 1) * int(i + 1));
  return v;
}
template <class T>
T expected(ReduceOp op, int size, std::size_t i) {
  return op == ReduceOp::Sum ? T(int(i + 1) * size * (size + 1) / 2) : T(int(i + 1) * size);
}

// Uneven ways to cut 10 elements over n ranks, including empty shards.
std::vector<std::vector<std::size_t>> cuts(int n) {
  std::vector<std::vector<std::size_t>> out;
  std::vector<std::size_t> even(n, 10 / n);
  for (int r = 0; r < 10 % n; ++r) ++even[r];  // e.g. 4 3 3
  out.push_back(even);
  std::vector<std::size_t> front(n, 1);
  front[0] = 0;
  front[1] = 10 - (n - 2);  // 0 9 1 (n = 3)
  out.push_back(front);
  std::vector<std::size_t> last(n, 0);
  last[n - 1] = 10;
  out.push_back(last);
  return out;
}

std::size_t offset_of(const std::vector<std::size_t>& c, int r) {
  std::size_t o = 0;
  for (int k = 0; k < r; ++k) o += c[k];
  return o;
}

template <class T>
void check_allreduce(std::size_t n) {
  auto& w = world();
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
    auto v = input<T>(w.rank(), n);
    w.allreduce(std::span<T>(v), op);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], (expected<T>(op, w.size(), i))) << i;
  }
}

template <class T>
void check_reduce_scatter(bool in_place) {
  auto& w = world();
  const DType t = dtype_of<T>::value;
  for (const auto& c : cuts(w.size()))
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
      auto send = input<T>(w.rank(), 10);
      const std::size_t off = offset_of(c, w.rank()), mine = c[w.rank()];
      std::vector<T> separate(mine);
      T* recv = in_place ? send.data() + off : separate.data();
      w.reduce_scatter(send.data(), recv, c, t, op);
      for (std::size_t k = 0; k < mine; ++k)
        ASSERT_EQ(recv[k], (expected<T>(op, w.size(), off + k))) << "element " << off + k;
    }
}

template <class T>
void check_allgather(bool in_place) {
  auto& w = world();
  const DType t = dtype_of<T>::value;
  for (const auto& c : cuts(w.size())) {
    const std::size_t off = offset_of(c, w.rank()), mine = c[w.rank()];
    std::vector<T> mine_v(mine), all(10, T(-1));
    for (std::size_t k = 0; k < mine; ++k) mine_v[k] = T(100 * w.rank() + int(k));
    if (in_place) std::copy(mine_v.begin(), mine_v.end(), all.begin() + off);
    w.allgather(in_place ? all.data() + off : mine_v.data(), all.data(), c, t);
    std::size_t i = 0;
    for (int r = 0; r < w.size(); ++r)
      for (std::size_t k = 0; k < c[r]; ++k, ++i) ASSERT_EQ(all[i], T(100 * r + int(k))) << i;
  }
}

TYPED_TEST(mpiCollectives, Allreduce) {
  check_allreduce<TypeParam>(1);
  check_allreduce<TypeParam>(1000);
}

TYPED_TEST(mpiCollectives, ReduceScatterUneven) { check_reduce_scatter<TypeParam>(false); }
TYPED_TEST(mpiCollectives, ReduceScatterInPlace) { check_reduce_scatter<TypeParam>(true); }
TYPED_TEST(mpiCollectives, AllgatherUneven) { check_allgather<TypeParam>(false); }
TYPED_TEST(mpiCollectives, AllgatherInPlace) { check_allgather<TypeParam>(true); }

TYPED_TEST(mpiCollectives, SplitIntoRounds) {
  // With at most 3 elements per MPI call every collective above needs
  // several pieces or rounds.
  ChunkLimitGuard guard(3);
  check_allreduce<TypeParam>(10);
  check_reduce_scatter<TypeParam>(false);
  check_reduce_scatter<TypeParam>(true);
  check_allgather<TypeParam>(false);
  check_allgather<TypeParam>(true);
}

TEST(mpiCollectives, NonBlockingAllreduceOverlapsPointToPoint) {
  auto& w = world();
  std::vector<double> v(100, w.rank() + 1.0);
  auto ar = w.iallreduce(v.data(), v.size(), DType::F64, ReduceOp::Sum);
  // Point-to-point traffic while the collective is in flight.
  int token = w.rank(), got = -1;
  const int n = w.size();
  auto rq = w.irecv(&got, sizeof got, (w.rank() + n - 1) % n, 1);
  auto sq = w.isend(&token, sizeof token, (w.rank() + 1) % n, 1);
  while (!ar->test()) {
  }
  rq->wait();
  sq->wait();
  EXPECT_EQ(got, (w.rank() + n - 1) % n);
  for (double x : v) ASSERT_EQ(x, n * (n + 1) / 2.0);
}

TEST(mpiCollectives, AllreduceValue) {
  auto& w = world();
  EXPECT_EQ(w.allreduce_value<std::int32_t>(w.rank(), ReduceOp::Max), w.size() - 1);
  EXPECT_EQ(w.allreduce_value<double>(0.5, ReduceOp::Sum), 0.5 * w.size());
}

TEST(mpiCollectives, Bf16Allgather) {
  // bf16 moves as raw 16-bit words.
  auto& w = world();
  std::vector<std::size_t> c(w.size(), 2);
  std::vector<std::uint16_t> mine = {std::uint16_t(0x3f80 + w.rank()), 0xbf80};
  std::vector<std::uint16_t> all(2 * w.size());
  w.allgather(mine.data(), all.data(), c, DType::BF16);
  for (int r = 0; r < w.size(); ++r) {
    EXPECT_EQ(all[2 * r], 0x3f80 + r);
    EXPECT_EQ(all[2 * r + 1], 0xbf80);
  }
}

TEST(mpiCollectives, BroadcastFromEveryRoot) {
  auto& w = world();
  for (int root = 0; root < w.size(); ++root) {
    std::vector<std::uint8_t> buf(37, 0);
    if (w.rank() == root)
      for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = std::uint8_t(root * 31 + i);
    w.broadcast(buf.data(), buf.size(), root);
    for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], std::uint8_t(root * 31 + i));
  }
  ChunkLimitGuard guard(5);
  std::vector<std::uint8_t> buf(23, w.rank() == 0 ? 9 : 0);
  w.broadcast(buf.data(), buf.size(), 0);
  for (auto b : buf) ASSERT_EQ(b, 9);
}

TEST(mpiCollectives, Barrier) {
  auto& w = world();
  for (int i = 0; i < 5; ++i) w.barrier();
  auto b = w.ibarrier();
  b->wait();
  EXPECT_TRUE(b->test());
}

TEST(mpiCollectives, ArgumentErrorsThrowBeforeCommunicating) {
  auto& w = world();
  std::vector<float> buf(10);
  std::vector<std::size_t> wrong(w.size() + 1, 1);
  EXPECT_THROW(w.reduce_scatter(buf.data(), buf.data(), wrong, DType::F32, ReduceOp::Sum), Error);
  EXPECT_THROW(w.allgather(buf.data(), buf.data(), wrong, DType::F32), Error);
  EXPECT_THROW(w.allreduce(buf.data(), 4, DType::BF16, ReduceOp::Sum), Error);
  EXPECT_THROW(w.broadcast(buf.data(), 4, w.size()), Error);
  // Overlapping buffers other than the in-place form.
  std::vector<std::size_t> c(w.size(), 1);
  const std::size_t off = w.rank();
  float* bad = buf.data() + (off + 1) % w.size();
  EXPECT_THROW(w.reduce_scatter(buf.data(), bad, c, DType::F32, ReduceOp::Sum), Error);
  EXPECT_THROW(w.allgather(bad, buf.data(), c, DType::F32), Error);
}

}  // namespace
}  // namespace wiola::comm::test
