// Golden bytes: request frames captured from real clients (librdkafka via kcat, kafka-python) by
// tools/capture_proxy.py, stored in tests/golden/data/<client>-<ApiName>-v<version>-<n>.bin (request
// header + body, no size prefix). Each frame must decode with our codec, consume every byte, and
// re-encode to identical bytes; a few decoded values are checked against what the clients sent.
// Refresh: tools/capture_golden.py --broker build/broker/sluice (see tests/integration/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "protocol/header.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/find_coordinator.h"
#include "protocol/messages/list_groups.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/messages/metadata.h"
#include "protocol/messages/offset_fetch.h"
#include "protocol/messages/produce.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace sluice::protocol {
namespace {

namespace fs = std::filesystem;

// Topic names the capture script (tools/capture_golden.py) uses.
const std::set<std::string> kCapturedTopics{"golden-kcat", "golden-kp"};

struct golden_file {
  fs::path path;
  std::string client;    // librdkafka | kafka-python | ...
  std::string api_name;  // as in the file name
  int version = -1;
};

std::vector<golden_file> list_golden_files() {
  std::vector<golden_file> out;
  const fs::path dir = SLUICE_GOLDEN_DIR;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".bin" || name.ends_with(".response.bin")) continue;
    // <client>-<ApiName>-v<version>-<n>.bin; the client may itself contain '-'.
    std::string stem = e.path().stem().string();
    auto n_dash = stem.rfind('-');
    auto v_dash = stem.rfind('-', n_dash - 1);
    auto a_dash = stem.rfind('-', v_dash - 1);
    golden_file g;
    g.path = e.path();
    g.client = stem.substr(0, a_dash);
    g.api_name = stem.substr(a_dash + 1, v_dash - a_dash - 1);
    g.version = std::stoi(stem.substr(v_dash + 2, n_dash - v_dash - 2));
    out.push_back(g);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Decodes the body as Msg, checks every byte was consumed, re-encodes header + body and compares.
template <class Msg>
Msg round_trip(const std::vector<uint8_t>& frame, const request_header& h, size_t body_offset) {
  reader r(std::span<const uint8_t>(frame.data() + body_offset, frame.size() - body_offset));
  Msg msg;
  msg.decode(r, h.api_version);
  EXPECT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(r.remaining(), 0u) << "bytes left after decoding the body";
  EXPECT_EQ(msg.encoded_size(h.api_version), frame.size() - body_offset);

  writer w;
  encode_request_header(w, h);
  msg.encode(w, h.api_version);
  encoded_frame f = w.finish();
  EXPECT_TRUE(f.file_regions.empty());
  EXPECT_EQ(f.bytes.size(), frame.size());
  if (f.bytes != frame) {
    size_t i = 0;
    while (i < std::min(f.bytes.size(), frame.size()) && f.bytes[i] == frame[i]) ++i;
    ADD_FAILURE() << "re-encoded bytes differ from the capture at byte " << i;
  }
  // And decoding the re-encoded body yields an equal message.
  reader r2(std::span<const uint8_t>(f.bytes.data() + body_offset, f.bytes.size() - body_offset));
  Msg again;
  again.decode(r2, h.api_version);
  EXPECT_TRUE(r2.ok());
  EXPECT_TRUE(again == msg);
  return msg;
}

class GoldenTest : public ::testing::TestWithParam<golden_file> {};

TEST_P(GoldenTest, DecodesAndReencodesIdentically) {
  const golden_file& g = GetParam();
  const std::vector<uint8_t> frame = read_file(g.path);
  ASSERT_GE(frame.size(), 10u);

  reader r{std::span<const uint8_t>(frame)};
  request_header h;
  ASSERT_TRUE(decode_request_header(r, h)) << r.error_message();
  const size_t body_offset = r.position();
  EXPECT_EQ(h.api_version, g.version) << "file name and header disagree";
  ASSERT_TRUE(h.client_id.has_value());
  if (g.client == "librdkafka") {
    EXPECT_EQ(*h.client_id, "rdkafka");  // kcat leaves librdkafka's default client.id
  } else if (g.client == "kafka-python") {
    EXPECT_TRUE(h.client_id->starts_with("kafka-python")) << *h.client_id;
  }

  switch (h.api_key) {
    case 0: {
      ASSERT_EQ(g.api_name, "Produce");
      auto m = round_trip<produce_request>(frame, h, body_offset);
      ASSERT_FALSE(m.topic_data.empty());
      for (const auto& t : m.topic_data) {
        EXPECT_TRUE(kCapturedTopics.count(t.name)) << t.name;
        for (const auto& p : t.partition_data) {
          ASSERT_TRUE(p.records_.has_value());
          EXPECT_GE(p.records_->size(), 61u) << "a v2 record batch header is 61 bytes";
        }
      }
      EXPECT_TRUE(m.acks == -1 || m.acks == 1) << m.acks;
      break;
    }
    case 1: {
      ASSERT_EQ(g.api_name, "Fetch");
      auto m = round_trip<fetch_request>(frame, h, body_offset);
      if (h.api_version <= 12) {
        for (const auto& t : m.topics) EXPECT_TRUE(kCapturedTopics.count(t.topic)) << t.topic;
      }
      break;
    }
    case 2: {
      ASSERT_EQ(g.api_name, "ListOffsets");
      auto m = round_trip<list_offsets_request>(frame, h, body_offset);
      for (const auto& t : m.topics) EXPECT_TRUE(kCapturedTopics.count(t.name)) << t.name;
      break;
    }
    case 3: {
      ASSERT_EQ(g.api_name, "Metadata");
      auto m = round_trip<metadata_request>(frame, h, body_offset);
      if (m.topics) {
        for (const auto& t : *m.topics) {
          if (t.name) {
            EXPECT_TRUE(kCapturedTopics.count(*t.name)) << *t.name;
          }
        }
      }
      break;
    }
    case 9: {
      ASSERT_EQ(g.api_name, "OffsetFetch");
      round_trip<offset_fetch_request>(frame, h, body_offset);
      break;
    }
    case 10: {
      ASSERT_EQ(g.api_name, "FindCoordinator");
      round_trip<find_coordinator_request>(frame, h, body_offset);
      break;
    }
    case 16: {
      ASSERT_EQ(g.api_name, "ListGroups");
      round_trip<list_groups_request>(frame, h, body_offset);
      break;
    }
    case 18: {
      ASSERT_EQ(g.api_name, "ApiVersions");
      auto m = round_trip<api_versions_request>(frame, h, body_offset);
      if (h.api_version >= 3 && g.client == "librdkafka") {
        EXPECT_EQ(m.client_software_name, "librdkafka");
        EXPECT_EQ(m.client_software_version, "2.0.2");
      }
      break;
    }
    case 19: {
      ASSERT_EQ(g.api_name, "CreateTopics");
      round_trip<create_topics_request>(frame, h, body_offset);
      break;
    }
    case 20: {
      ASSERT_EQ(g.api_name, "DeleteTopics");
      round_trip<delete_topics_request>(frame, h, body_offset);
      break;
    }
    default:
      FAIL() << "no golden round trip for api key " << h.api_key << " (" << g.api_name
             << "): add a case or drop the file";
  }
}

std::string test_name(const ::testing::TestParamInfo<golden_file>& info) {
  std::string s = info.param.path.stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Captured, GoldenTest, ::testing::ValuesIn(list_golden_files()), test_name);

// The capture set must cover what the task asks for; fails loudly if files go missing.
TEST(GoldenSet, CoversTheCapturedClientsAndApis) {
  std::set<std::string> have;
  for (const auto& g : list_golden_files()) have.insert(g.client + "-" + g.api_name);
  for (const char* need : {"librdkafka-ApiVersions", "kafka-python-ApiVersions", "kafka-python-Metadata"})
    EXPECT_TRUE(have.count(need)) << need << " missing from " << SLUICE_GOLDEN_DIR;
#ifdef SLUICE_GOLDEN_FULL
  for (const char* need : {"librdkafka-Metadata", "librdkafka-Produce", "librdkafka-Fetch", "kafka-python-Produce",
                           "kafka-python-Fetch"})
    EXPECT_TRUE(have.count(need)) << need << " missing from " << SLUICE_GOLDEN_DIR;
#endif
}

}  // namespace
}  // namespace sluice::protocol
