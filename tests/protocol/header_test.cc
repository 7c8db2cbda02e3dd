// Headers, framing, api keys, error codes, traits.
#include "protocol/header.h"

#include <gtest/gtest.h>

#include "protocol/api_traits.h"
#include "protocol/error_code.h"
#include "protocol/messages/all.h"

namespace sluice::protocol {
namespace {

TEST(header, versions) {
  EXPECT_EQ(request_header_version(0, 8), 1);
  EXPECT_EQ(request_header_version(0, 9), 2);
  EXPECT_EQ(response_header_version(0, 9), 1);
  EXPECT_EQ(response_header_version(18, 3), 0);  // ApiVersions: always v0
  EXPECT_EQ(request_header_version(18, 3), 2);
  EXPECT_EQ(request_header_version(7, 0), 1);    // unknown to us
  EXPECT_EQ(response_header_version(1000, 5), 0);
}

TEST(header, decode_skips_tagged_fields_of_flexible_header) {
  // Metadata v9: header v2 with one unknown tagged field.
  std::vector<uint8_t> b = {0x00, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x2a, 0xff, 0xff, 0x01, 0x07, 0x01, 0xee, 0x55};
  reader r(b);
  request_header h;
  ASSERT_TRUE(decode_request_header(r, h));
  EXPECT_EQ(h.correlation_id, 42);
  EXPECT_FALSE(h.client_id.has_value());
  EXPECT_EQ(r.position(), 14u);
}

TEST(header, truncated_header_fails_with_context) {
  std::vector<uint8_t> b = {0x00, 0x00, 0x00, 0x09, 0x00};
  reader r(b);
  request_header h;
  EXPECT_FALSE(decode_request_header(r, h));
  EXPECT_EQ(r.error_field(), "request_header.correlation_id");
  EXPECT_NE(r.error_message().find("Produce v9"), std::string::npos);
}

TEST(header, encode_response_flexible_has_header_tagged_fields) {
  metadata_response m;
  encoded_frame f = encode_response(9, 9, m);
  ASSERT_GE(f.bytes.size(), 9u);
  EXPECT_EQ(f.bytes[8], 0x00);  // empty header tagged fields
  reader r(f.bytes);
  EXPECT_EQ(static_cast<size_t>(r.read_int32("size")), f.total_size() - 4);
  int32_t corr = 0;
  ASSERT_TRUE(decode_response_header(r, 1, corr));
  EXPECT_EQ(corr, 9);
  metadata_response d;
  d.decode(r, 9);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(api_key, names_and_values) {
  EXPECT_EQ(static_cast<int16_t>(api_key::produce), 0);
  EXPECT_EQ(static_cast<int16_t>(api_key::api_versions), 18);
  EXPECT_EQ(static_cast<int16_t>(api_key::describe_cluster), 60);
  EXPECT_EQ(api_name(3), "Metadata");
  EXPECT_EQ(api_name(int16_t{-5}), "unknown");
}

TEST(error_code, table) {
  EXPECT_EQ(static_cast<int16_t>(error_code::unknown_server_error), -1);
  EXPECT_EQ(static_cast<int16_t>(error_code::unknown_topic_or_partition), 3);
  EXPECT_EQ(static_cast<int16_t>(error_code::unsupported_version), 35);
  EXPECT_EQ(error_name(error_code::not_leader_or_follower), "NOT_LEADER_OR_FOLLOWER");
  EXPECT_EQ(error_name(static_cast<error_code>(30000)), "UNKNOWN_ERROR_CODE");
}

TEST(api_traits, table_matches_message_structs) {
  ASSERT_FALSE(all_api_traits().empty());
  const api_traits* p = find_api_traits(0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "Produce");
  EXPECT_EQ(p->max_version, produce_request::max_version);
  EXPECT_EQ(p->first_flexible_version, 9);
  EXPECT_EQ(find_api_traits(17)->first_flexible_version, -1);  // SaslHandshake
  EXPECT_EQ(find_api_traits(4), nullptr);
  for (const api_traits& t : all_api_traits()) {
    bool found = visit_request_type(static_cast<int16_t>(t.key), [&](auto tag) {
      using M = typename decltype(tag)::type;
      EXPECT_EQ(M::min_version, t.min_version);
      EXPECT_EQ(M::max_version, t.max_version);
    });
    EXPECT_TRUE(found) << t.name;
    EXPECT_TRUE(visit_response_type(static_cast<int16_t>(t.key), [](auto) {}));
  }
}

}  // namespace
}  // namespace sluice::protocol
