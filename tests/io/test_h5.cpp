#include <gtest/gtest.h>

#include <numeric>

#include "io/h5.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

using h5::File;
using h5::Shape;

template <class T>
class H5RoundTrip : public ::testing::Test {};
using ElementTypes =
    ::testing::Types<float, double, std::int32_t, std::uint16_t, std::uint32_t, std::uint64_t>;
TYPED_TEST_SUITE(H5RoundTrip, ElementTypes);

TYPED_TEST(H5RoundTrip, EveryRank) {
  using T = TypeParam;
  test::TempDir dir;
  const std::string path = dir.file("rt.h5");
  const std::vector<Shape> shapes = {{}, {7}, {3, 5}, {2, 3, 4}, {0}};
  {
    File f = File::create(path);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      std::vector<T> v(static_cast<std::size_t>(h5::numel(shapes[i])));
      for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<T>(k * 3 + 1);
      f.write<T>(std::string("d").append(std::to_string(i)), shapes[i], v);
    }
    f.close();
  }
  const File f = File::open_read(path);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = std::string("d").append(std::to_string(i));
    Shape s;
    const std::vector<T> v = f.read<T>(name, &s);
    EXPECT_EQ(s, shapes[i]) << name;
    EXPECT_EQ(f.file_type(name), h5::type_of<T>::value);
    ASSERT_EQ(v.size(), static_cast<std::size_t>(h5::numel(shapes[i])));
    for (std::size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k], static_cast<T>(k * 3 + 1));
    // Reading converts to the requested memory type.
    const std::vector<double> d = f.read<double>(name);
    for (std::size_t k = 0; k < d.size(); ++k) EXPECT_EQ(d[k], static_cast<double>(k * 3 + 1));
  }
  EXPECT_EQ(f.read_scalar<T>("d0"), static_cast<T>(1));
}

TEST(H5, StoresInAnotherFileType) {
  test::TempDir dir;
  const std::string path = dir.file("conv.h5");
  const std::vector<double> v = {0.1, -2.5, 1e10};
  {
    File f = File::create(path);
    f.write<double>("as_f32", {3}, v, h5::Type::F32);
    f.write_scalar<std::int32_t>("answer", 42);
  }
  const File f = File::open_read(path);
  EXPECT_EQ(f.file_type("as_f32"), h5::Type::F32);
  const auto back = f.read<double>("as_f32");
  for (std::size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(back[i], static_cast<double>(static_cast<float>(v[i])));
  EXPECT_EQ(f.read_scalar<double>("answer"), 42.0);
  EXPECT_EQ(f.shape("answer"), Shape{});
}

TEST(H5, GroupsAndListing) {
  test::TempDir dir;
  const std::string path = dir.file("groups.h5");
  const std::vector<float> w(6, 1.5f);
  {
    File f = File::create(path);
    f.write<float>("embed.weight", {2, 3}, w);
    f.write<float>("grad/layers.0.attn.q_proj.weight", {2, 3}, w);
    f.write<float>("grad/layers.0.attn_norm.gamma", {6}, w);
    f.create_group("opt/m");
    f.create_group("opt/m");  // idempotent
  }
  File f = File::open_rw(path);
  EXPECT_TRUE(f.has_group("grad"));
  EXPECT_TRUE(f.has_group("opt/m"));
  EXPECT_FALSE(f.has_group("embed.weight"));
  EXPECT_TRUE(f.has_dataset("grad/layers.0.attn.q_proj.weight"));
  EXPECT_FALSE(f.has_dataset("grad"));
  EXPECT_FALSE(f.has_dataset("nope/deeper"));
  EXPECT_EQ(f.list_datasets(), std::vector<std::string>{"embed.weight"});
  EXPECT_EQ(f.list_datasets("grad"), (std::vector<std::string>{"layers.0.attn.q_proj.weight",
                                                               "layers.0.attn_norm.gamma"}));
  EXPECT_EQ(f.read<float>("grad/layers.0.attn.q_proj.weight"), w);
  f.write<float>("late", {1}, std::vector<float>{2.0f});  // read-write mode appends objects
  EXPECT_TRUE(f.has_dataset("late"));
  EXPECT_ERROR(f.list_datasets("missing"), "groups.h5", "group 'missing' is missing");
  EXPECT_ERROR(f.create_group("embed.weight"), "groups.h5", "another object");
}

TEST(H5, Attributes) {
  test::TempDir dir;
  const std::string path = dir.file("attrs.h5");
  {
    File f = File::create(path);
    f.write<double>("w", {2}, std::vector<double>{1, 2});
    f.write_attr_int("vocab_size", 257);
    f.write_attr_double("theta0", 10000.5);
    f.write_attr_string("format", "wiola-tokens");
    f.write_attr_string("empty", "");
    f.write_attr_double("integral", 4.0);
    f.write_attr_string("units", "nats", "w");
    f.write_attr_int("vocab_size", 300);  // overwrite
  }
  const File f = File::open_read(path);
  EXPECT_EQ(f.read_attr_int("vocab_size"), 300);
  EXPECT_EQ(f.read_attr_double("vocab_size"), 300.0);
  EXPECT_EQ(f.read_attr_double("theta0"), 10000.5);
  EXPECT_EQ(f.read_attr_int("integral"), 4);
  EXPECT_EQ(f.read_attr_string("format"), "wiola-tokens");
  EXPECT_EQ(f.read_attr_string("empty"), "");
  EXPECT_EQ(f.read_attr_string("units", "w"), "nats");
  EXPECT_TRUE(f.has_attr("units", "w"));
  EXPECT_FALSE(f.has_attr("units"));
  EXPECT_EQ(f.list_attrs(),
            (std::vector<std::string>{"empty", "format", "integral", "theta0", "vocab_size"}));
  EXPECT_EQ(f.attr_as_text("theta0"), "10000.5");
  EXPECT_EQ(f.attr_as_text("vocab_size"), "300");
  EXPECT_EQ(f.attr_as_text("format"), "wiola-tokens");
  EXPECT_ERROR(f.read_attr_int("missing"), "attrs.h5: attribute 'missing' is missing");
  EXPECT_ERROR(f.read_attr_string("nope", "w"), "attrs.h5", "attribute 'nope' of 'w' is missing");
  EXPECT_ERROR(f.read_attr_int("theta0"), "attrs.h5", "theta0", "not an integer");
  EXPECT_ERROR(f.read_attr_int("format"), "attrs.h5", "format", "not a number");
  EXPECT_ERROR(f.read_attr_string("vocab_size"), "attrs.h5", "vocab_size", "not a string");
  EXPECT_ERROR(f.read_attr_int("x", "no_such"), "attrs.h5", "object 'no_such' is missing");
}

TEST(H5, HyperslabAndAppend) {
  test::TempDir dir;
  const std::string path = dir.file("slab.h5");
  {
    File f = File::create(path);
    h5::Dataset ds = f.create_extendible("tokens", h5::Type::U16, 4);
    std::vector<std::uint32_t> a(10), b(7);
    std::iota(a.begin(), a.end(), 0u);
    std::iota(b.begin(), b.end(), 10u);
    ds.append<std::uint32_t>(a);
    ds.append<std::uint32_t>(b);
    EXPECT_EQ(ds.shape(), Shape{17});
  }
  const File f = File::open_read(path);
  const h5::Dataset ds = f.dataset("tokens", h5::Access::Random);
  EXPECT_EQ(ds.file_type(), h5::Type::U16);
  EXPECT_TRUE(ds.holds_integers());
  std::int32_t out[5];
  ds.read_range(9, 5, out);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[i], 9 + i);
  ds.read_range(16, 0, out);
  EXPECT_ERROR(ds.read_range(15, 3, out), "slab.h5", "dataset 'tokens'", "[15, 18)",
               "outside its 17 elements");
}

TEST(H5, Errors) {
  test::TempDir dir;
  EXPECT_ERROR(File::open_read(dir.file("absent.h5")), "absent.h5: no such file");
  test::write_text(dir.file("text.h5"), "hello, this is not HDF5\n");
  EXPECT_ERROR(File::open_read(dir.file("text.h5")), "text.h5: not an HDF5 file");
  EXPECT_ERROR(File::open_read(dir.path().string()), "is a directory");
  EXPECT_ERROR(File::create(dir.file("no/such/dir/x.h5")), "x.h5", "cannot create");

  const std::string path = dir.file("x.h5");
  File f = File::create(path);
  f.write<float>("a", {2}, std::vector<float>{1, 2});
  EXPECT_ERROR(f.write<float>("a", {2}, std::vector<float>{1, 2}), "x.h5: dataset 'a' already exists");
  EXPECT_ERROR(f.write<float>("b", {2, 2}, std::vector<float>{1, 2}), "x.h5", "dataset 'b'",
               "4 elements but 2");
  EXPECT_ERROR(f.read<float>("tokens"), "x.h5: dataset 'tokens' is missing");
  EXPECT_ERROR(f.read_attr_int("vocab_size"), "x.h5: attribute 'vocab_size' is missing");
  EXPECT_ERROR(f.dataset("a").read_range(0, 3, static_cast<float*>(nullptr)), "outside");
}

}  // namespace
}  // namespace wiola
