// libFuzzer target: the decoders of the internal topics' records, which a coordinator replays when it loads a
// partition of __consumer_offsets or __transaction_state (broker/groups/record_codec.h, the KIP-848 records of
// broker/groups/consumer_records.h, broker/txn/txn_record_codec.h).
//
// Input: [decoder byte] [record key or value bytes...]. Where the codec has an encoder for the decoded type, what
// it encodes must decode and encode to the same bytes again (the coordinator must read back what it wrote).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <variant>

#include "broker/groups/consumer_group.h"
#include "broker/groups/consumer_records.h"
#include "broker/groups/group_write.h"
#include "broker/groups/record_codec.h"
#include "broker/txn/txn_record_codec.h"

using sluice::groups::bytes;

namespace {

[[noreturn]] void unstable(const char* what) {
  std::fprintf(stderr, "offsets_record_fuzz: %s: encode(decode(encode(x))) differs from encode(x)\n", what);
  std::abort();
}

// encode(decode(b)) decodes to a value that encodes to the same bytes.
template <class Decode, class Encode>
void stable(const bytes& b, Decode decode, Encode encode, const char* what) {
  auto first = decode(b);
  if (!first) return;
  const bytes e = encode(*first);
  if (e.empty()) return;  // not written by this codec
  auto second = decode(e);
  if (!second || encode(*second) != e) unstable(what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace g = sluice::groups;
  namespace t = sluice::txn;
  if (size < 1) return 0;
  const bytes b(data + 1, data + size);
  switch (data[0] % 13) {
    case 0:
      stable(b, [](const bytes& x) { return g::decode_key(x); },
             [](const g::record_key& k) {
               if (const auto* o = std::get_if<g::offset_commit_key>(&k)) return g::encode_key(*o);
               if (const auto* m = std::get_if<g::group_metadata_key>(&k)) return g::encode_key(*m);
               return bytes{};  // other_key: KIP-848 and unknown keys are not written through this codec
             },
             "__consumer_offsets key");
      break;
    case 1:
      stable(b, [](const bytes& x) { return g::decode_offset_commit_value(x); },
             [](const g::offset_commit_value& v) { return g::encode_value(v); }, "OffsetCommitValue");
      break;
    case 2:
      stable(b, [](const bytes& x) { return g::decode_group_metadata_value(x); },
             [](const g::group_metadata_value& v) { return g::encode_value(v); }, "GroupMetadataValue");
      break;
    case 3:
      (void)g::decode_subscription_topics(b);
      break;
    case 4:
      (void)g::decode_consumer_key(b);
      break;
    case 5:
      stable(b, [](const bytes& x) { return g::decode_epoch_value(x); },
             [](int32_t e) { return *g::group_epoch_record("g", e).value; }, "ConsumerGroupMetadataValue");
      break;
    case 6: {
      g::consumer_member m;
      (void)g::decode_member_metadata_value(b, m);
      break;
    }
    case 7:
      stable(b, [](const bytes& x) { return g::decode_target_assignment_value(x); },
             [](const g::partition_map& p) { return *g::target_assignment_record("g", "m", p).value; },
             "ConsumerGroupTargetAssignmentMemberValue");
      break;
    case 8: {
      g::consumer_member m;
      (void)g::decode_current_assignment_value(b, m);
      break;
    }
    case 9:
      stable(b, [](const bytes& x) { return g::decode_regex_value(x); },
             [](const g::resolved_regex& r) { return *g::regex_record("g", "t.*", r).value; },
             "ConsumerGroupRegularExpressionValue");
      break;
    case 10:
      stable(b, [](const bytes& x) { return t::decode_key(x); },
             [](const std::string& id) { return t::encode_key(id); }, "TransactionLogKey");
      break;
    case 11:
      stable(b, [](const bytes& x) { return t::decode_value(x); },
             [](const t::txn_log_value& v) { return t::encode_value(v); }, "TransactionLogValue");
      break;
    case 12: {
      // A member's subscription then its assignment into the same member, as loading replays them.
      g::consumer_member m;
      const size_t half = b.size() / 2;
      (void)g::decode_member_metadata_value(bytes(b.begin(), b.begin() + static_cast<ptrdiff_t>(half)), m);
      (void)g::decode_current_assignment_value(bytes(b.begin() + static_cast<ptrdiff_t>(half), b.end()), m);
      (void)g::member_subscription_record("g", m);
      (void)g::current_assignment_record("g", m);
      break;
    }
  }
  return 0;
}
