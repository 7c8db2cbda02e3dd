// Hand-checked byte vectors (computed from the Kafka protocol guide, not captured from a client).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/header.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/join_group.h"
#include "protocol/messages/metadata.h"

namespace sluice::protocol {
namespace {

std::vector<uint8_t> bytes_of(std::string_view s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// ApiVersions v3 request: flexible body, request header v2 whose client_id stays a classic string.
TEST(vectors, api_versions_v3_request) {
  const std::vector<uint8_t> expected = cat({
      {0x00, 0x00, 0x00, 0x27},                                  // size 39
      {0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01},          // key 18, version 3, correlation id 1
      {0x00, 0x03}, bytes_of("cli"),                             // client_id (int16 length)
      {0x00},                                                    // header tagged fields
      {0x12}, bytes_of("apache-kafka-java"),                     // compact string: 17 + 1
      {0x06}, bytes_of("3.7.0"),                                 // compact string: 5 + 1
      {0x00},                                                    // body tagged fields
  });
  api_versions_request req;
  req.client_software_name = "apache-kafka-java";
  req.client_software_version = "3.7.0";
  encoded_frame f = encode_request(1, 3, std::string("cli"), req);
  EXPECT_EQ(f.bytes, expected);

  reader r(std::span<const uint8_t>(expected).subspan(4));
  request_header h;
  ASSERT_TRUE(decode_request_header(r, h));
  EXPECT_EQ(h.api_key, 18);
  EXPECT_EQ(h.api_version, 3);
  EXPECT_EQ(h.correlation_id, 1);
  EXPECT_EQ(h.client_id, "cli");
  api_versions_request d;
  d.decode(r, h.api_version);
  ASSERT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(d, req);
}

// ApiVersions v3 response: header v0 (always, KIP-511), one tagged field (FinalizedFeaturesEpoch, tag 1).
TEST(vectors, api_versions_v3_response_with_tagged_field) {
  api_versions_response resp;
  resp.api_keys.push_back({0, 0, 11});
  resp.finalized_features_epoch = 5;
  const std::vector<uint8_t> expected = {
      0x00, 0x00, 0x00, 0x1d,                          // size 29
      0x00, 0x00, 0x00, 0x07,                          // correlation id; no header tagged fields
      0x00, 0x00,                                      // error_code none
      0x02,                                            // compact array of 1
      0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00,        // produce 0..11, no tagged fields
      0x00, 0x00, 0x00, 0x00,                          // throttle_time_ms
      0x01,                                            // one tagged field
      0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 0x05,           // tag 1, 8 bytes, epoch 5
  };
  encoded_frame f = encode_response(7, 3, resp);
  EXPECT_EQ(f.bytes, expected);

  reader r(std::span<const uint8_t>(expected).subspan(8));
  api_versions_response d;
  d.decode(r, 3);
  ASSERT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(d.finalized_features_epoch, 5);
  EXPECT_FALSE(d.zk_migration_ready);
  EXPECT_EQ(d, resp);

  // At the default (-1) the tagged field is not written.
  resp.finalized_features_epoch = -1;
  EXPECT_EQ(encode_response(7, 3, resp).bytes.size(), expected.size() - 10);  // tag, size, 8 bytes; the count stays (0)
}

TEST(vectors, metadata_v1_null_topics_vs_empty) {
  metadata_request all;  // null: all topics
  all.topics.reset();
  metadata_request none;  // empty list: no topics
  none.topics.emplace();
  writer w1, w2;
  all.encode(w1, 1);
  none.encode(w2, 1);
  EXPECT_EQ(w1.finish().bytes, (std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(w2.finish().bytes, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x00}));

  std::vector<uint8_t> null_bytes = {0xff, 0xff, 0xff, 0xff};
  reader r(null_bytes);
  metadata_request d;
  d.decode(r, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(d.topics.has_value());

  // v0 has no null: a null optional is written as an empty array.
  writer w0;
  all.encode(w0, 0);
  EXPECT_EQ(w0.finish().bytes, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x00}));

  // v9: compact null array is 0x00; allow_auto_topic_creation defaults to true.
  writer w9;
  all.encode(w9, 9);
  EXPECT_EQ(w9.finish().bytes, (std::vector<uint8_t>{0x00, 0x01, 0x00, 0x00, 0x00}));
}

TEST(vectors, compact_nullable_string_in_join_group_v6) {
  join_group_request req;
  req.group_id = "g";
  req.session_timeout_ms = 10;
  req.rebalance_timeout_ms = 20;
  req.member_id = "";
  req.group_instance_id.reset();
  req.protocol_type = "consumer";
  writer w;
  req.encode(w, 6);
  auto f = w.finish();
  const std::vector<uint8_t> expected = cat({
      {0x02, 'g'},                                   // group_id
      {0, 0, 0, 10}, {0, 0, 0, 20},                  // session / rebalance timeouts
      {0x01},                                        // member_id ""
      {0x00},                                        // group_instance_id null
      {0x09}, bytes_of("consumer"),                  // protocol_type
      {0x01},                                        // protocols: empty compact array
      {0x00},                                        // tagged fields
  });
  EXPECT_EQ(f.bytes, expected);
}

TEST(vectors, fetch_v12_tagged_cluster_id) {
  fetch_request req;
  req.cluster_id = "abc";
  writer w;
  req.encode(w, 12);
  auto f = w.finish();
  // Ends with the top-level tagged section: 1 field, tag 0, 4 bytes, compact string "abc".
  const std::vector<uint8_t> tail = {0x01, 0x00, 0x04, 0x04, 'a', 'b', 'c'};
  ASSERT_GE(f.bytes.size(), tail.size());
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), f.bytes.end() - tail.size()));
  reader r(f.bytes);
  fetch_request d;
  d.decode(r, 12);
  ASSERT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(d.cluster_id, "abc");
}

}  // namespace
}  // namespace sluice::protocol
