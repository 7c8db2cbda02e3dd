// writer: primitives, compact encodings and file-region gather lists.
#include "protocol/writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <vector>

#include "protocol/messages/fetch.h"

namespace sluice::protocol {
namespace {

TEST(writer, primitives_big_endian) {
  writer w;
  w.write_int16(0x0102);
  w.write_int32(-1);
  w.write_unsigned_varint(300);
  auto f = w.finish();
  EXPECT_EQ(f.bytes, (std::vector<uint8_t>{0x01, 0x02, 0xff, 0xff, 0xff, 0xff, 0xac, 0x02}));
}

TEST(writer, compact_nullable_string) {
  writer w;
  w.write_nullable_string(std::nullopt, true);
  w.write_nullable_string(std::string("ab"), true);
  w.write_nullable_string(std::nullopt, false);
  w.write_string(std::optional<std::string>(), true);  // null where not nullable: empty string
  auto f = w.finish();
  EXPECT_EQ(f.bytes, (std::vector<uint8_t>{0x00, 0x03, 'a', 'b', 0xff, 0xff, 0x01}));
  EXPECT_EQ(sizes::nullable_string(std::nullopt, true), 1u);
  EXPECT_EQ(sizes::nullable_string(std::string("ab"), true), 3u);
}

TEST(writer, file_regions_make_a_gather_list) {
  auto file = std::make_shared<const file_handle>(::open("/dev/null", O_RDONLY));
  writer w;
  w.write_int32(7);
  w.write_records(records::from_file(file_region{file, 100, 50}), false);
  w.write_int8(1);
  EXPECT_EQ(w.size(), 4u + 4u + 50u + 1u);
  auto f = w.finish();
  ASSERT_EQ(f.file_regions.size(), 1u);
  EXPECT_EQ(f.file_regions[0].first, 8u);  // after the int32 and the records length
  EXPECT_EQ(f.file_regions[0].second.position, 100);
  EXPECT_EQ(f.bytes.size(), 9u);
  EXPECT_EQ(f.total_size(), 59u);
  EXPECT_EQ(f.bytes[7], 50);  // length prefix counts the file bytes
}

TEST(writer, fetch_response_with_file_records_sizes_match) {
  auto file = std::make_shared<const file_handle>(::open("/dev/null", O_RDONLY));
  fetch_response resp;
  auto& t = resp.responses.emplace_back();
  t.topic = "t";
  auto& p = t.partitions.emplace_back();
  p.partition_index = 0;
  p.records_ = records::from_file(file_region{file, 0, 1000});
  for (int16_t v : {4, 11, 12, 16}) {
    writer w;
    resp.encode(w, v);
    EXPECT_EQ(w.size(), resp.encoded_size(v)) << v;
    auto f = w.finish();
    EXPECT_EQ(f.file_regions.size(), 1u);
    EXPECT_EQ(f.total_size(), resp.encoded_size(v));
  }
}

}  // namespace
}  // namespace sluice::protocol
