// Dataset entries: paths, globs, manifests, mixing weights.
#include <gtest/gtest.h>

#include "io/data_sources.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

using Files = std::vector<std::string>;

// a + b without operator+ chains (GCC 12's false -Wrestrict).
std::string cat(std::string a, const std::string& b) {
  a += b;
  return a;
}

TEST(DataSources, PathsAndGlobs) {
  test::TempDir dir;
  for (const char* n : {"b-1.h5", "a-2.h5", "a-1.h5", "c.txt"}) test::write_text(dir.file(n), "x");
  const DataSources one = resolve_data_sources({dir.file("a-*.h5")});
  ASSERT_EQ(one.components.size(), 1u);
  EXPECT_FALSE(one.weighted);
  EXPECT_EQ(one.components[0].files, (Files{dir.file("a-1.h5"), dir.file("a-2.h5")}));
  // Unweighted entries form one component: uniform over every file.
  const DataSources all = resolve_data_sources({dir.file("b-1.h5"), dir.file("a-?.h5")});
  ASSERT_EQ(all.components.size(), 1u);
  EXPECT_EQ(all.all_files(), (Files{dir.file("b-1.h5"), dir.file("a-1.h5"), dir.file("a-2.h5")}));
  // A plain path is taken as it is (opening it reports a missing file).
  EXPECT_EQ(resolve_data_sources({"missing.h5"}).all_files(), Files{"missing.h5"});
  EXPECT_ERROR(resolve_data_sources({dir.file("z*.h5")}), "z*.h5' matches no file");
  EXPECT_ERROR(resolve_data_sources({dir.file("a-1.h5"), dir.file("a-*.h5")}), "a-1.h5' is listed twice");
  EXPECT_ERROR(resolve_data_sources({}), "no files");
}

TEST(DataSources, WeightsGivenAsAList) {
  test::TempDir dir;
  for (const char* n : {"web-1.h5", "web-2.h5", "code.h5"}) test::write_text(dir.file(n), "x");
  const DataSources s = resolve_data_sources({dir.file("web-*.h5"), dir.file("code.h5")}, {0.7, 0.3});
  EXPECT_TRUE(s.weighted);
  ASSERT_EQ(s.components.size(), 2u);
  EXPECT_EQ(s.components[0].files.size(), 2u);
  EXPECT_DOUBLE_EQ(s.components[0].weight, 0.7);
  EXPECT_EQ(s.components[1].name, dir.file("code.h5"));
  EXPECT_ERROR(resolve_data_sources({dir.file("code.h5")}, {0.5, 0.5}), "2 weights for 1 entries");
  EXPECT_ERROR(resolve_data_sources({dir.file("code.h5"), dir.file("web-1.h5")}, {1, 0}),
               "must be > 0");
  EXPECT_EQ(parse_weight_list("0.7,0.3", "--data-weights"), (std::vector<double>{0.7, 0.3}));
  EXPECT_ERROR(parse_weight_list("0.7,x", "--data-weights"), "--data-weights: weight 'x'");
  EXPECT_ERROR(parse_weight_list("-1", "--data-weights"), "not a number > 0");
}

TEST(DataSources, Manifests) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.file("shards"));
  for (const char* n : {"shards/s0.h5", "shards/s1.h5", "books.h5"}) test::write_text(dir.file(n), "x");
  test::write_text(dir.file("mix.manifest"),
                   cat(cat("# corpus mix\nshards/s*.h5   3   # web\n\n", dir.file("books.h5")), " 1\n"));
  const DataSources s = resolve_data_sources({dir.file("mix.manifest")});
  EXPECT_TRUE(s.weighted);
  ASSERT_EQ(s.components.size(), 2u);
  EXPECT_EQ(s.components[0].files, (Files{dir.file("shards/s0.h5"), dir.file("shards/s1.h5")}));
  EXPECT_DOUBLE_EQ(s.components[0].weight, 3);
  EXPECT_EQ(s.components[1].files, Files{dir.file("books.h5")});
  // '@' makes any file a manifest; without weights it is one component.
  test::write_text(dir.file("list.txt"), "shards/s0.h5\nbooks.h5\n");
  const DataSources u = resolve_data_sources({cat("@", dir.file("list.txt"))});
  EXPECT_FALSE(u.weighted);
  EXPECT_EQ(u.all_files(), (Files{dir.file("shards/s0.h5"), dir.file("books.h5")}));
  EXPECT_ERROR(resolve_data_sources({cat("@", dir.file("list.txt"))}, {1, 2, 3}), "3 weights for 2 entries");
  EXPECT_ERROR(resolve_data_sources({dir.file("mix.manifest")}, {1, 2}), "both in a manifest and as a list");

  test::write_text(dir.file("half.manifest"), "books.h5 2\nshards/s0.h5\n");
  EXPECT_ERROR(resolve_data_sources({dir.file("half.manifest")}), "half.manifest:2: ",
               "has no weight, but other entries do");
  test::write_text(dir.file("bad.manifest"), "books.h5 heavy\n");
  EXPECT_ERROR(resolve_data_sources({dir.file("bad.manifest")}), "bad.manifest:1: ", "weight 'heavy'");
  test::write_text(dir.file("three.manifest"), "books.h5 1 2\n");
  EXPECT_ERROR(resolve_data_sources({dir.file("three.manifest")}), "three.manifest:1: ", "3 fields");
  test::write_text(dir.file("nest.manifest"), "other.manifest\n");
  EXPECT_ERROR(resolve_data_sources({dir.file("nest.manifest")}), "do not nest");
  test::write_text(dir.file("empty.manifest"), "# nothing\n");
  EXPECT_ERROR(resolve_data_sources({dir.file("empty.manifest")}), "lists no files");
  EXPECT_ERROR(resolve_data_sources({cat("@", dir.file("none.txt"))}), "none.txt: cannot read the manifest");
}

}  // namespace
}  // namespace wiola
