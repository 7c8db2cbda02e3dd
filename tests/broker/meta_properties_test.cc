// meta.properties (Kafka's MetaProperties / MetaPropertiesEnsemble): parse, format, read/write on disk and
// the start-up checks that refuse another broker's or another cluster's log dir.
#include "broker/meta_properties.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/storage/test_util.h"

namespace sluice::broker {
namespace {

using storage::testing::temp_dir;  // a fresh /tmp directory, removed at the end of the test

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::trunc);
  out << text;
}

const std::string kCluster = "zldxMjl0ByQMJOu_X510Wg";
const std::string kOtherCluster = "Qm9ndXNDbHVzdGVySWQwMA";
const std::string kDirId = "7sV0m0lvTuaWnE5qk3m6Bw";

TEST(MetaPropertiesParse, VersionZeroAsKafkaZooKeeperBrokersWriteIt) {
  // Java's Properties.store output: a comment line, a date line, then the keys.
  auto p = parse_meta_properties("#\n#Tue Mar 05 10:00:00 UTC 2024\nversion=0\nbroker.id=3\ncluster.id=" + kCluster +
                                 "\ndirectory.id=" + kDirId + "\n");
  ASSERT_TRUE(p.ok()) << p.err().message;
  EXPECT_EQ(p->version, 0);
  EXPECT_EQ(p->broker_id, 3);
  EXPECT_EQ(p->cluster_id, kCluster);
  EXPECT_EQ(p->directory_id, kDirId);
}

TEST(MetaPropertiesParse, MissingVersionIsZeroAndOlderFilesMayLackIds) {
  auto p = parse_meta_properties("broker.id=7\n");
  ASSERT_TRUE(p.ok()) << p.err().message;
  EXPECT_EQ(p->version, 0);
  EXPECT_EQ(p->broker_id, 7);
  EXPECT_FALSE(p->cluster_id.has_value());
  EXPECT_FALSE(p->directory_id.has_value());
}

TEST(MetaPropertiesParse, VersionOneReadsNodeId) {
  auto p = parse_meta_properties("version=1\nnode.id=4\ncluster.id=" + kCluster + "\n");
  ASSERT_TRUE(p.ok()) << p.err().message;
  EXPECT_EQ(p->version, 1);
  EXPECT_EQ(p->broker_id, 4);
  EXPECT_EQ(p->cluster_id, kCluster);
}

TEST(MetaPropertiesParse, RefusesWhatIsNotAValidFile) {
  struct bad_case {
    std::string text;
    std::string reason;
  };
  const std::vector<bad_case> cases = {
      {"version=2\nbroker.id=1\n", "Unknown meta.properties version number '2'"},
      {"version=zero\nbroker.id=1\n", "Unknown meta.properties version number 'zero'"},
      {"version=0\nbroker.id=one\n", "Failed to parse broker.id property as an int: 'one'"},
      {"version=0\nbroker.id=4294967296\n", "Failed to parse broker.id property as an int"},
      {"version=0\nbroker.id=\n", "Failed to parse broker.id property as an int: ''"},
      {"version=1\ncluster.id=" + kCluster + "\n", "node.id was not found"},
      {"version=1\nnode.id=1\n", "cluster.id was not found"},
      {"version=0\nbroker.id=1\ndirectory.id=not-a-uuid\n", "Unable to read directory.id as a Uuid: 'not-a-uuid'"},
      {"version=0\nbroker.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n", "reserved"},  // Kafka's UNASSIGNED
      {"\x7f" "ELF binary garbage\n", "none of the keys"},
      {"", "none of the keys"},
  };
  for (const auto& c : cases) {
    auto p = parse_meta_properties(c.text);
    ASSERT_FALSE(p.ok()) << "accepted: " << c.text;
    EXPECT_NE(p.err().message.find(c.reason), std::string::npos) << p.err().message;
  }
}

TEST(MetaPropertiesFormat, CommentLineThenKeysAndRoundTrip) {
  meta_properties p{0, 12, kCluster, kDirId};
  const auto text = format_meta_properties(p);
  EXPECT_EQ(text, "#\nversion=0\nbroker.id=12\ncluster.id=" + kCluster + "\ndirectory.id=" + kDirId + "\n");
  auto back = parse_meta_properties(text);
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(*back, p);
  meta_properties v1{1, 5, kCluster, std::nullopt};
  EXPECT_EQ(format_meta_properties(v1), "#\nversion=1\nnode.id=5\ncluster.id=" + kCluster + "\n");
  EXPECT_EQ(*parse_meta_properties(format_meta_properties(v1)), v1);
}

TEST(MetaPropertiesFormat, NewDirectoryIdsAreValidAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    auto id = new_directory_id();
    EXPECT_EQ(id.size(), 22u);
    EXPECT_NE(id.front(), '-');
    auto p = parse_meta_properties("directory.id=" + id + "\n");
    EXPECT_TRUE(p.ok()) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(MetaPropertiesFile, ReadWriteAndMissing) {
  temp_dir d;
  auto none = read_meta_properties(d.path());
  ASSERT_TRUE(none.ok()) << none.err().message;
  EXPECT_FALSE(none->has_value());
  meta_properties p{0, 1, kCluster, kDirId};
  ASSERT_TRUE(write_meta_properties(d.path(), p).ok());
  EXPECT_FALSE(std::filesystem::exists(d.path() / "meta.properties.tmp"));
  EXPECT_EQ(slurp(d.path() / "meta.properties").substr(0, 2), "#\n");
  auto back = read_meta_properties(d.path());
  ASSERT_TRUE(back.ok()) << back.err().message;
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(**back, p);
}

TEST(MetaPropertiesFile, UnparsableOrUnreadableFileIsAnErrorNamingTheFile) {
  temp_dir d;
  put(d.path() / "meta.properties", "version=9\n");
  auto r = read_meta_properties(d.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find((d.path() / "meta.properties").string()), std::string::npos) << r.err().message;
  EXPECT_NE(r.err().message.find("version number '9'"), std::string::npos) << r.err().message;
  std::filesystem::remove(d.path() / "meta.properties");
  std::filesystem::create_directory(d.path() / "meta.properties");  // not a file: cannot be read
  EXPECT_FALSE(read_meta_properties(d.path()).ok());
}

class MetaPropertiesEnsembleTest : public ::testing::Test {
 protected:
  std::filesystem::path dir(int i) {
    auto p = root_.path() / ("d" + std::to_string(i));
    std::filesystem::create_directories(p);
    return p;
  }
  meta_properties_ensemble load(std::vector<std::filesystem::path> dirs) {
    auto e = meta_properties_ensemble::load(dirs);
    EXPECT_TRUE(e.ok()) << e.err().message;
    return *e;
  }
  temp_dir root_;
};

TEST_F(MetaPropertiesEnsembleTest, EmptyDirsPassAndCompleteWritesEveryDir) {
  auto a = dir(1), b = dir(2);
  auto e = load({a, b});
  EXPECT_TRUE(e.verify(1).ok());
  EXPECT_FALSE(e.cluster_id().has_value());
  EXPECT_TRUE(e.verify_cluster_id(kCluster, "zk", "").ok());
  auto written = e.complete(1, kCluster);
  ASSERT_TRUE(written.ok()) << written.err().message;
  EXPECT_EQ(written->size(), 2u);
  auto pa = read_meta_properties(a), pb = read_meta_properties(b);
  ASSERT_TRUE(pa.ok() && pa->has_value() && pb.ok() && pb->has_value());
  EXPECT_EQ((*pa)->version, 0);
  EXPECT_EQ((*pa)->broker_id, 1);
  EXPECT_EQ((*pa)->cluster_id, kCluster);
  ASSERT_TRUE((*pa)->directory_id && (*pb)->directory_id);
  EXPECT_NE(*(*pa)->directory_id, *(*pb)->directory_id);
  // Checked again at the next start: same ids pass and nothing is rewritten.
  auto again = load({a, b});
  EXPECT_TRUE(again.verify(1).ok());
  EXPECT_EQ(again.cluster_id(), kCluster);
  EXPECT_TRUE(again.verify_cluster_id(kCluster, "zk", "").ok());
  auto rewritten = again.complete(1, kCluster);
  ASSERT_TRUE(rewritten.ok());
  EXPECT_TRUE(rewritten->empty());
}

TEST_F(MetaPropertiesEnsembleTest, BrokerIdDiffersNamesBothIdsAndTheDir) {
  auto a = dir(1);
  ASSERT_TRUE(write_meta_properties(a, meta_properties{0, 1, kCluster, kDirId}).ok());
  auto r = load({a}).verify(2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("Configured broker.id 2 doesn't match stored broker.id 1 in " +
                                 (a / "meta.properties").string()),
            std::string::npos)
      << r.err().message;
}

TEST_F(MetaPropertiesEnsembleTest, ClusterIdDiffersNamesBothIds) {
  auto a = dir(1);
  ASSERT_TRUE(write_meta_properties(a, meta_properties{0, 1, kCluster, kDirId}).ok());
  auto e = load({a});
  EXPECT_TRUE(e.verify(1).ok());
  auto r = e.verify_cluster_id(kOtherCluster, "/cluster/id", "Wrong cluster.");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("The Cluster ID " + kOtherCluster + " (/cluster/id) doesn't match stored clusterId " +
                                 kCluster + " in " + (a / "meta.properties").string() + ". Wrong cluster."),
            std::string::npos)
      << r.err().message;
  EXPECT_EQ(e.cluster_id_dir(), a);
}

TEST_F(MetaPropertiesEnsembleTest, TwoDirsOfDifferentBrokersAreRefusedListingBoth) {
  auto a = dir(1), b = dir(2);
  ASSERT_TRUE(write_meta_properties(a, meta_properties{0, 1, kCluster, std::nullopt}).ok());
  ASSERT_TRUE(write_meta_properties(b, meta_properties{0, 2, kCluster, std::nullopt}).ok());
  for (int configured : {1, 2}) {
    auto r = load({a, b}).verify(configured);
    ASSERT_FALSE(r.ok());
    const auto& m = r.err().message;
    EXPECT_NE(m.find("not consistent across log.dirs"), std::string::npos) << m;
    EXPECT_NE(m.find("- " + a.string() + " -> version=0, broker.id=1, cluster.id=" + kCluster), std::string::npos) << m;
    EXPECT_NE(m.find("- " + b.string() + " -> version=0, broker.id=2, cluster.id=" + kCluster), std::string::npos) << m;
  }
}

TEST_F(MetaPropertiesEnsembleTest, TwoDirsOfDifferentClustersAreRefused) {
  auto a = dir(1), b = dir(2), c = dir(3);
  ASSERT_TRUE(write_meta_properties(a, meta_properties{0, 1, kCluster, std::nullopt}).ok());
  ASSERT_TRUE(write_meta_properties(b, meta_properties{0, 1, kOtherCluster, std::nullopt}).ok());
  auto r = load({a, b, c}).verify(1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("- " + c.string() + " -> (no meta.properties)"), std::string::npos) << r.err().message;
}

TEST_F(MetaPropertiesEnsembleTest, VersionOneAndDuplicateDirectoryIdsAreRefused) {
  auto a = dir(1), b = dir(2);
  ASSERT_TRUE(write_meta_properties(a, meta_properties{1, 1, kCluster, std::nullopt}).ok());
  auto r = load({a}).verify(1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("Found unexpected version 1 in " + (a / "meta.properties").string()), std::string::npos)
      << r.err().message;
  ASSERT_TRUE(write_meta_properties(a, meta_properties{0, 1, kCluster, kDirId}).ok());
  ASSERT_TRUE(write_meta_properties(b, meta_properties{0, 1, kCluster, kDirId}).ok());  // a copied dir
  auto d = load({a, b}).verify(1);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.err().message.find("Duplicate directory.id " + kDirId), std::string::npos) << d.err().message;
}

TEST_F(MetaPropertiesEnsembleTest, OlderFilesAreCompletedAndMissingFilesAdopted) {
  auto a = dir(1), b = dir(2);
  put(a / "meta.properties", "#old Kafka\nversion=0\nbroker.id=1\n");  // no cluster.id, no directory.id
  auto e = load({a, b});
  ASSERT_TRUE(e.verify(1).ok());
  auto written = e.complete(1, kCluster);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->size(), 2u);
  auto pa = read_meta_properties(a);
  ASSERT_TRUE(pa.ok() && pa->has_value());
  EXPECT_EQ((*pa)->broker_id, 1);
  EXPECT_EQ((*pa)->cluster_id, kCluster);
  EXPECT_TRUE((*pa)->directory_id.has_value());
  // A complete file is left byte for byte as it was.
  put(a / "meta.properties", "#kept\nversion=0\nbroker.id=1\ncluster.id=" + kCluster + "\ndirectory.id=" + kDirId + "\n");
  auto kept = load({a}).complete(1, kCluster);
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->empty());
  EXPECT_EQ(slurp(a / "meta.properties").substr(0, 6), "#kept\n");
}

TEST_F(MetaPropertiesEnsembleTest, LoadFailsOnAnUnparsableFile) {
  auto a = dir(1);
  put(a / "meta.properties", "version=0\nbroker.id=x1\n");
  auto e = meta_properties_ensemble::load({a});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.err().message.find("cannot use " + (a / "meta.properties").string() +
                                 ": Failed to parse broker.id property as an int: 'x1'"),
            std::string::npos)
      << e.err().message;
}

}  // namespace
}  // namespace sluice::broker
