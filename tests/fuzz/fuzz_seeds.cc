// Writes the seed corpora of the fuzz targets (tests/fuzz/README.md) from real data: the client frames captured in
// tests/golden/data, and messages, batches, files and records made by the project's own writers.
//   fuzz_seeds OUT_DIR [golden frame files...]
// writes OUT_DIR/<target>/<name> (request_fuzz: OUT_DIR/request_fuzz/<API name>/<name>, and OUT_DIR/request_fuzz_all
// for a run over every API at once, with the API index byte first). Each file starts with the target's selector
// byte(s), see each target's header comment.
//
// The message values come from the generated round-trip fillers (fill(msg, version, variant)), which live in the
// generated test source; it is included here for them (its gtest cases are registered but never run).
#include "generated_roundtrip_test.cc"  // NOLINT: the fillers of every message

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "broker/config.h"
#include "broker/groups/consumer_group.h"
#include "broker/groups/consumer_records.h"
#include "broker/groups/record_codec.h"
#include "broker/meta_properties.h"
#include "broker/txn/txn_record_codec.h"
#include "coordination/embedded_store.h"
#include "coordination/zk/znodes.h"
#include "protocol/api_traits.h"
#include "protocol/header.h"
#include "storage/compression.h"
#include "storage/control_record.h"
#include "storage/leader_epoch_cache.h"
#include "storage/offset_checkpoint.h"
#include "storage/offset_index.h"
#include "storage/producer_state.h"
#include "storage/record_batch.h"
#include "storage/time_index.h"
#include "storage/transaction_index.h"

namespace fs = std::filesystem;
using bytes = std::vector<uint8_t>;

namespace {

fs::path out_dir;
int written = 0;

void put(const fs::path& sub, const std::string& name, uint8_t selector, std::span<const uint8_t> body) {
  const fs::path d = out_dir / sub;
  fs::create_directories(d);
  std::ofstream out(d / name, std::ios::binary);
  out.put(static_cast<char>(selector));
  out.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
  ++written;
}

void put_text(const fs::path& sub, const std::string& name, uint8_t selector, const std::string& text) {
  put(sub, name, selector, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

bytes read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---- request_fuzz, frame_fuzz ----------------------------------------------------------------------------------

size_t api_index(int16_t key) {
  const auto all = sluice::protocol::all_api_traits();
  for (size_t i = 0; i < all.size(); ++i)
    if (static_cast<int16_t>(all[i].key) == key) return i;
  return 0;
}

void body_seed(const sluice::protocol::api_traits& t, int16_t v, bool response, const std::string& name,
               std::span<const uint8_t> body) {
  const auto sel = static_cast<uint8_t>((response ? 0x80 : 0) | (v - t.min_version));
  put(fs::path("request_fuzz") / std::string(t.name), name, sel, body);
  bytes with_sel{sel};
  with_sel.insert(with_sel.end(), body.begin(), body.end());
  put("request_fuzz_all", std::string(t.name) + "-" + name, static_cast<uint8_t>(api_index(static_cast<int16_t>(t.key))),
      with_sel);
}

void message_seeds() {
  using namespace sluice::protocol;
  for (const api_traits& t : all_api_traits()) {
    const auto key = static_cast<int16_t>(t.key);
    for (int16_t v = t.min_version; v <= t.max_version; ++v) {
      for (int variant = 0; variant < 2; ++variant) {
        const std::string name = "v" + std::to_string(v) + "-" + std::to_string(variant);
        visit_request_type(key, [&](auto tag) {
          typename decltype(tag)::type m;
          fill(m, v, variant);
          writer w;
          m.encode(w, v);
          body_seed(t, v, false, "request-" + name, w.finish().bytes);
          // frame_fuzz: the whole frame as a client sends it, at the served versions.
          if (variant == 0 && v >= t.served_min_version && v <= t.served_max_version &&
              (v == t.served_min_version || v == t.served_max_version)) {
            encoded_frame f = encode_request(request_header{key, v, 7, std::string("fuzz-seed")}, m);
            put("frame_fuzz", std::string(t.name) + "-" + name, 0, f.bytes);
          }
        });
        visit_response_type(key, [&](auto tag) {
          typename decltype(tag)::type m;
          fill(m, v, variant);
          writer w;
          m.encode(w, v);
          body_seed(t, v, true, "response-" + name, w.finish().bytes);
        });
      }
    }
  }
}

// Captured client frames (no size prefix): the request body for request_fuzz, size + frame (twice, as a client
// pipelines) for frame_fuzz.
void golden_seeds(const std::vector<fs::path>& files) {
  using namespace sluice::protocol;
  for (const auto& p : files) {
    const bytes frame = read_all(p);
    reader r(frame);
    request_header h;
    if (!decode_request_header(r, h)) continue;
    const api_traits* t = find_api_traits(h.api_key);
    if (t == nullptr || h.api_version < t->min_version || h.api_version > t->max_version) continue;
    const std::string name = "golden-" + p.stem().string();
    body_seed(*t, h.api_version, false, name, std::span(frame).subspan(r.position()));
    bytes stream;
    for (int i = 0; i < 2; ++i) {
      const auto n = static_cast<uint32_t>(frame.size());
      stream.insert(stream.end(), {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)});
      stream.insert(stream.end(), frame.begin(), frame.end());
    }
    put("frame_fuzz", name, 0, stream);
  }
}

// ---- record_batch_fuzz -----------------------------------------------------------------------------------------

void batch_seeds() {
  using namespace sluice::storage;
  const record_header hdrs[] = {{"trace", std::string_view("abc")}, {"null-header", std::nullopt}};
  std::vector<bytes> batches;
  {
    record_batch_builder b;
    b.add(std::string_view("k1"), std::string_view("value one"), 1700000000000);
    b.add(std::nullopt, std::string_view("no key"), 1700000000001);
    b.add(std::string_view("k3"), std::nullopt, 1700000000002, hdrs);
    batches.push_back(b.build());
  }
  {
    record_batch_builder b;
    b.set_producer(4000, 2, 17).set_transactional();
    for (int i = 0; i < 5; ++i) b.add(std::string_view("key"), std::string_view("transactional value"), 1700000000000 + i);
    batches.push_back(b.build());
  }
  batches.push_back(build_end_txn_marker_batch(4000, 2, end_txn_marker{true, 3}, 1700000000010));
  int n = 0;
  for (const bytes& batch : batches) {
    const auto records = std::span(batch).subspan(record_batch_header_size);
    const auto header = std::span(batch).first(record_batch_header_size);
    put("record_batch_fuzz", "raw-none-" + std::to_string(n), 0x05, batch);
    put("record_batch_fuzz", "raw-none-rules-" + std::to_string(n), 0x15, batch);
    for (uint8_t codec = 1; codec <= 4; ++codec) {
      const auto c = static_cast<compression_codec>(codec);
      auto z = compress(c, records);
      if (!z) continue;
      // As a client sends it: the records compressed, the codec in the attributes, the CRC recomputed.
      bytes compressed(header.begin(), header.end());
      compressed.insert(compressed.end(), z->begin(), z->end());
      const auto len = static_cast<uint32_t>(compressed.size() - log_overhead);
      for (int i = 0; i < 4; ++i) compressed[batch_field::batch_length + i] = static_cast<uint8_t>(len >> (24 - 8 * i));
      compressed[batch_field::attributes + 1] = static_cast<uint8_t>((compressed[batch_field::attributes + 1] & ~7) | codec);
      recompute_crc(compressed);
      const std::string cn(codec_name(c));
      put("record_batch_fuzz", "raw-" + cn + "-" + std::to_string(n), 0x05 | 0x40, compressed);
      // Fixed-up modes: header + compressed payload, and header + records that the harness compresses.
      bytes fixed(header.begin(), header.end());
      fixed.insert(fixed.end(), z->begin(), z->end());
      put("record_batch_fuzz", "fixed-" + cn + "-" + std::to_string(n), codec, fixed);
      put("record_batch_fuzz", "fixed-compress-" + cn + "-" + std::to_string(n), codec | 0x08 | 0x20, batch);
    }
    ++n;
  }
}

// ---- index_fuzz ------------------------------------------------------------------------------------------------

void index_seeds(const fs::path& tmp) {
  using namespace sluice::storage;
  fs::create_directories(tmp);
  {
    const auto p = tmp / "00000000000000000100.index";
    auto idx = offset_index::open(p, 100);
    for (int i = 1; i <= 6; ++i) (void)idx->append(100 + i * 10, i * 4096);
    (void)idx->flush();
    idx->close();
    put("index_fuzz", "offset-index", 0, read_all(p));
  }
  {
    const auto p = tmp / "00000000000000000100.timeindex";
    auto idx = time_index::open(p, 100);
    for (int i = 1; i <= 6; ++i) (void)idx->maybe_append(1700000000000 + i * 1000, 100 + i * 10);
    (void)idx->flush();
    idx->close();
    put("index_fuzz", "time-index", 1, read_all(p));
  }
  {
    const auto p = tmp / "00000000000000000100.txnindex";
    auto idx = transaction_index::open(p);
    (void)idx->append(aborted_txn{4000, 105, 130, 105});
    (void)idx->append(aborted_txn{4001, 140, 170, 150});
    (void)idx->flush();
    idx->close();
    put("index_fuzz", "txn-index", 2, read_all(p));
  }
  {
    leader_epoch_cache cache(tmp);
    (void)cache.assign(0, 0);
    (void)cache.assign(3, 1200);
    (void)cache.assign(4, 1500);
    put("index_fuzz", "leader-epoch-checkpoint", 3, read_all(tmp / leader_epoch_checkpoint_file));
  }
  {
    const auto p = tmp / recovery_point_checkpoint_file;
    (void)write_offset_checkpoint(p, {{{"orders", 0}, 1234}, {{"orders", 1}, 987}, {{"__consumer_offsets", 7}, 5}});
    put("index_fuzz", "offset-checkpoint", 4, read_all(p));
  }
  {
    producer_state_manager m(tmp, 3600000);
    for (int64_t pid : {4000, 4001}) {
      record_batch_header h;
      h.base_offset = pid - 3990;
      h.last_offset_delta = 4;
      h.producer_id = pid;
      h.producer_epoch = 1;
      h.base_sequence = 0;
      h.records_count = 5;
      h.max_timestamp = 1700000000000;
      if (pid == 4001) h.attributes = batch_attribute::transactional_bit;
      producer_state_manager::pending_append p;
      if (m.check_and_stage(p, h)) m.commit(std::move(p));
    }
    const bytes snap = m.encode_snapshot();
    put("index_fuzz", "producer-snapshot", 5, snap);
    put("index_fuzz", "producer-snapshot-file", 6, snap);
  }
}

// ---- znode_fuzz ------------------------------------------------------------------------------------------------

void znode_seeds(const fs::path& tmp) {
  using namespace sluice::coordination::zk;
  // As Kafka 3.x brokers and controllers write them.
  put_text("znode_fuzz", "broker", 0,
           R"({"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},)"
           R"("endpoints":["PLAINTEXT://broker-1:9092","SSL://broker-1:9093"],"jmx_port":-1,"port":9092,)"
           R"("host":"broker-1","version":5,"timestamp":"1700000000000","rack":"rack-a"})");
  put_text("znode_fuzz", "controller", 1, R"({"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1})");
  put_text("znode_fuzz", "controller-ours", 1, controller_znode::encode(3, 1700000000000));
  put_text("znode_fuzz", "controller-epoch", 2, "17");
  put_text("znode_fuzz", "topic", 3,
           R"({"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"3mJ0pGvSRvK8u1nK0fXQ6w","adding_replicas":{},)"
           R"("removing_replicas":{},"version":3})");
  put_text("znode_fuzz", "topic-reassigning", 3,
           R"({"version":3,"topic_id":"3mJ0pGvSRvK8u1nK0fXQ6w","partitions":{"0":[1,2,4]},"adding_replicas":{"0":[4]},)"
           R"("removing_replicas":{"0":[3]}})");
  put_text("znode_fuzz", "partition-state", 4, R"({"controller_epoch":4,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2,3]})");
  put_text("znode_fuzz", "partition-state-elr", 4,
           R"({"controller_epoch":4,"leader":-1,"version":1,"leader_epoch":8,"isr":[1],"leader_recovery_state":1})");
  put_text("znode_fuzz", "topic-config", 5, topic_config_znode::encode({{"cleanup.policy", "compact"}, {"retention.ms", "1000"}}));
  put_text("znode_fuzz", "preferred-election", 6, preferred_replica_election_znode::encode({{"orders", 0}, {"orders", 3}}));
  put_text("znode_fuzz", "cluster-id", 7, cluster_id_znode::encode("K3mJ0pGvSRvK8u1nK0fXQw"));
  put_text("znode_fuzz", "producer-id-block", 8, R"({"version":1,"broker":1,"block_start":"1000","block_end":"1999"})");
  put_text("znode_fuzz", "controlled-shutdown", 9, controlled_shutdown_znode::encode({}));
  put_text("znode_fuzz", "acl", 10,
           R"({"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},)"
           R"({"principal":"User:bob","permissionType":"Deny","operation":"Write","host":"10.0.0.1"}]})");
  const fs::path store = tmp / "store";
  if (sluice::coordination::embedded_store::open(store))
    put("znode_fuzz", "embedded-store", 11, read_all(sluice::coordination::embedded_store::file_in(store)));
}

// ---- offsets_record_fuzz ---------------------------------------------------------------------------------------

void offsets_seeds() {
  namespace g = sluice::groups;
  namespace t = sluice::txn;
  put("offsets_record_fuzz", "offset-commit-key", 0, g::encode_key(g::offset_commit_key{"group-1", "orders", 3}));
  put("offsets_record_fuzz", "group-metadata-key", 0, g::encode_key(g::group_metadata_key{"group-1"}));
  g::offset_commit_value ocv;
  ocv.offset = 1234;
  ocv.leader_epoch = 5;
  ocv.metadata = "checkpoint";
  ocv.commit_timestamp = 1700000000000;
  put("offsets_record_fuzz", "offset-commit-value", 1, g::encode_value(ocv));
  g::group_metadata_value gmv;
  gmv.protocol_type = "consumer";
  gmv.generation = 4;
  gmv.protocol = "range";
  gmv.leader = "member-1";
  gmv.current_state_timestamp = 1700000000000;
  g::kafka_writer sub;  // ConsumerProtocolSubscription v0: version, topics, user data
  sub.int16(0);
  sub.int32(2);
  sub.string("orders");
  sub.string("payments");
  sub.int32(-1);
  const g::bytes subscription = sub.take();
  gmv.members.push_back({"member-1", std::nullopt, "client-1", "/127.0.0.1", 300000, 45000, subscription, {}});
  put("offsets_record_fuzz", "group-metadata-value", 2, g::encode_value(gmv));
  put("offsets_record_fuzz", "subscription", 3, subscription);
  g::topic_uuid topic{};
  topic[15] = 1;
  g::consumer_member m;
  m.member_id = "member-1";
  m.client_id = "client-1";
  m.client_host = "/127.0.0.1";
  m.subscribed_topic_names = {"orders"};
  m.rebalance_timeout_ms = 300000;
  m.member_epoch = 3;
  m.assigned[topic] = {0, 1, 2};
  g::resolved_regex re;
  re.topics = {"orders", "orders-2"};
  re.version = 2;
  re.timestamp = 1700000000000;
  const g::group_record records[] = {
      g::group_epoch_record("group-1", 3), g::member_subscription_record("group-1", m),
      g::target_assignment_record("group-1", "member-1", m.assigned), g::current_assignment_record("group-1", m),
      g::regex_record("group-1", "orders.*", re)};
  const uint8_t value_selector[] = {5, 6, 7, 8, 9};
  for (size_t i = 0; i < std::size(records); ++i) {
    put("offsets_record_fuzz", "consumer-key-" + std::to_string(i), 4, records[i].key);
    put("offsets_record_fuzz", "consumer-key-as-key-" + std::to_string(i), 0, records[i].key);
    if (records[i].value) put("offsets_record_fuzz", "consumer-value-" + std::to_string(i), value_selector[i], *records[i].value);
  }
  g::bytes both = *records[1].value;
  both.insert(both.end(), records[3].value->begin(), records[3].value->end());
  put("offsets_record_fuzz", "member-then-assignment", 12, both);
  put("offsets_record_fuzz", "txn-key", 10, t::encode_key("payments-tx"));
  t::txn_log_value v;
  v.producer_id = 4000;
  v.producer_epoch = 3;
  v.timeout_ms = 60000;
  v.state = t::txn_state::ongoing;
  v.partitions = {{"orders", 0}, {"orders", 1}};
  v.last_update_timestamp_ms = 1700000000000;
  v.start_timestamp_ms = 1700000000000;
  put("offsets_record_fuzz", "txn-value", 11, t::encode_value(v));
  v.previous_producer_id = 3999;
  put("offsets_record_fuzz", "txn-value-v1", 11, t::encode_value(v));
}

// ---- config_fuzz -----------------------------------------------------------------------------------------------

void config_seeds() {
  put_text("config_fuzz", "server-properties", 0,
           "# a broker\nbroker.id=1\nlisteners=PLAINTEXT://:9092,SSL://:9093\n"
           "advertised.listeners=PLAINTEXT://broker-1:9092,SSL://broker-1:9093\n"
           "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL\nlog.dirs=/var/lib/sluice/a,/var/lib/sluice/b\n"
           "num.partitions=3\nlog.retention.hours=168\nzookeeper.connect=localhost:2181/sluice\n"
           "group.initial.rebalance.delay.ms : 0\nlistener.name.ssl.ssl.keystore.location = /etc/k\\\n  s.jks\n"
           "message.max.bytes 2000000\nsasl.enabled.mechanisms=SCRAM-SHA-256\\u002cPLAIN\n");
  put_text("config_fuzz", "overrides", 1,
           "log.dirs=/data\nlisteners=PLAINTEXT://127.0.0.1:0\nauto.create.topics.enable=false\n"
           "log.segment.bytes=1048576\ncompression.type=zstd\n");
  put_text("config_fuzz", "environment", 2,
           "KAFKA_CFG_BROKER_ID=2\nSLUICE_CFG_LOG_DIRS=/data\nKAFKA_CFG_LISTENERS=PLAINTEXT://:9092\n"
           "KAFKA_CFG_LOG_RETENTION_MS=1000\nPATH=/usr/bin\nSLUICE_CFG_SOME__KEY=x\n");
  put_text("config_fuzz", "listeners", 3, "PLAINTEXT://[::1]:9092,SASL_SSL://host.example:9094,http://:8080");
  sluice::broker::meta_properties mp;
  mp.broker_id = 1;
  mp.cluster_id = "K3mJ0pGvSRvK8u1nK0fXQw";
  put_text("config_fuzz", "meta-properties", 4, sluice::broker::format_meta_properties(mp));
  mp.version = 1;
  mp.directory_id = sluice::broker::new_directory_id();
  put_text("config_fuzz", "meta-properties-v1", 4, sluice::broker::format_meta_properties(mp));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_seeds OUT_DIR [golden frame files...]\n");
    return 2;
  }
  out_dir = argv[1];
  fs::create_directories(out_dir);
  const fs::path tmp = out_dir / ".tmp";
  message_seeds();
  golden_seeds(std::vector<fs::path>(argv + 2, argv + argc));
  batch_seeds();
  index_seeds(tmp / "index");
  znode_seeds(tmp / "znode");
  offsets_seeds();
  config_seeds();
  fs::remove_all(tmp);
  std::printf("fuzz_seeds: %d seed files in %s\n", written, out_dir.c_str());
  return 0;
}
