// libFuzzer target: every parser of cluster metadata the broker reads from ZooKeeper or from disk
// (coordination/zk/znodes.h: broker registration, controller, controller epoch, topic assignment, partition
// state, topic config, preferred replica election, cluster id, producer id block, controlled shutdown; the ACL
// nodes of broker/security/acl.h; the embedded store's __cluster_metadata.json of coordination/embedded_store.h).
//
// Input: [parser byte] [znode data...]. A znode that decodes must encode to data that decodes and encodes to the
// same text again (what the broker writes it can read back).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_temp_dir.h"
#include "broker/security/acl.h"
#include "coordination/embedded_store.h"
#include "coordination/zk/znodes.h"

namespace fs = std::filesystem;
using namespace sluice::coordination;
using namespace sluice::coordination::zk;

using sluice::fuzz::fuzz_temp_dir;

namespace {

// decode(encode(decode(data))) must succeed and encode to the same text.
template <class Decode, class Encode>
void stable(const std::string& data, Decode decode, Encode encode, const char* what) {
  auto first = decode(data);
  if (!first) return;
  const std::string text = encode(*first);
  auto second = decode(text);
  if (!second || encode(*second) != text) {
    std::fprintf(stderr, "znode_fuzz: %s: what encode() wrote does not decode to the same value: %s\n", what,
                 text.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sluice::fuzz::make_fuzz_temp_dir("znode-fuzz");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 12) {
    case 0:
      stable(text, [](const std::string& s) { return broker_znode::decode(7, s); },
             [](const auto& b) { return broker_znode::encode(b, 1700000000000); }, "broker registration");
      break;
    case 1:
      stable(text, [](const std::string& s) { return controller_znode::decode(s); },
             [](int32_t id) { return controller_znode::encode(id, 1700000000000); }, "controller");
      break;
    case 2:
      stable(text, [](const std::string& s) { return controller_epoch_znode::decode(s); },
             [](int32_t e) { return controller_epoch_znode::encode(e); }, "controller epoch");
      break;
    case 3:
      stable(text, [](const std::string& s) { return topic_znode::decode("orders", s); },
             [](const auto& t) { return topic_znode::encode(t); }, "topic assignment");
      break;
    case 4:
      stable(text, [](const std::string& s) { return partition_state_znode::decode(s, 3); },
             [](const auto& p) { return partition_state_znode::encode(p); }, "partition state");
      break;
    case 5:
      stable(text, [](const std::string& s) { return topic_config_znode::decode(s); },
             [](const auto& c) { return topic_config_znode::encode(c); }, "topic config");
      break;
    case 6:
      stable(text, [](const std::string& s) { return preferred_replica_election_znode::decode(s); },
             [](const auto& p) { return preferred_replica_election_znode::encode(p); }, "preferred replica election");
      break;
    case 7:
      stable(text, [](const std::string& s) { return cluster_id_znode::decode(s); },
             [](const std::string& id) { return cluster_id_znode::encode(id); }, "cluster id");
      break;
    case 8:
      stable(text, [](const std::string& s) { return producer_id_block_znode::decode(s); },
             [](const auto& b) { return producer_id_block_znode::encode(b); }, "producer id block");
      break;
    case 9:
      stable(text, [](const std::string& s) { return controlled_shutdown_znode::decode(s); },
             [](const auto& v) { return controlled_shutdown_znode::encode(v); }, "controlled shutdown");
      break;
    case 10: {
      // /kafka-acl/<resource type>/<name> (LITERAL) and /kafka-acl-extended/prefixed/... (PREFIXED).
      const acl_node_key key{size % 2 ? "PREFIXED" : "LITERAL", size % 3 ? "Topic" : "Group", "orders"};
      stable(text, [&](const std::string& s) { return sluice::broker::security::decode_acl_node(key, s); },
             [](const auto& acls) { return sluice::broker::security::encode_acl_node(acls); }, "acl node");
      break;
    }
    case 11: {
      // The embedded store's state file, read at start (a file it wrote, or one damaged on disk).
      const fs::path dir = fuzz_temp_dir() / "store";
      std::error_code ec;
      fs::remove_all(dir, ec);
      fs::create_directories(dir, ec);
      {
        std::ofstream out(embedded_store::file_in(dir), std::ios::binary);
        out << text;
      }
      (void)embedded_store::open(dir);
      break;
    }
  }
  return 0;
}
