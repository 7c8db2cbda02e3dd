// crash_test: kill -9 the broker at random moments while a producer writes numbered records with
// acks=-1 to a topic with flush.messages=1, restart it, and check that nothing acknowledged is lost and
// nothing corrupt is ever served. A program that prints its figures (DESIGN.md §6: random tests print
// their seed); CTest runs it as integration.crash_test.
//
//   crash_test [--rounds 20] [--seed N] [--partitions 2] [--max-kill-delay-ms 400]
//
// Each round: (re)start the broker on the same data dir and port; a fresh producer (acks=all,
// idempotence off, max.in.flight=1, retries on) writes numbers n = next, next+1, ... (value "n<n>",
// partition n % P) as fast as the broker acknowledges them; after a seeded random delay counted from the
// round's first acknowledgement the broker gets SIGKILL while requests are in flight; it is restarted at
// once, the producer's queued and retried records go through (or fail after message.timeout.ms), and
// then every partition is read from offset 0 with a group-less consumer (check.crcs=true).
//
// What must hold after every restart, for everything produced in all rounds so far:
//   - lost = 0: every acknowledged number is in the log, and the record at the offset its delivery
//     report gave holds that number;
//   - corrupt = 0: the consumer reports no error other than partition EOF (a torn or corrupt batch
//     would show as a CRC / message-set error);
//   - order: per partition, the numbers in order of first appearance are strictly increasing (the
//     producer keeps one request in flight, so retries cannot reorder);
//   - offsets are dense from 0 and no number appears that was never produced.
// Without idempotence a record whose request was written but whose response was lost is retried and
// appears twice: such duplicates are allowed and counted ("dup"), as are un-acknowledged numbers that
// made it to the log ("unacked_present").
//
// Exit status: 0 pass, 1 failure, 77 skipped (no broker binary).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "broker_process.h"
#include "admin_util.h"
#include "rdkafka_util.h"

using namespace sluice::itest;
using namespace std::chrono_literals;

namespace {

struct options {
  int rounds = 20;
  uint64_t seed = 0;
  bool seed_given = false;
  int partitions = 2;
  int max_kill_delay_ms = 400;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "missing value for " << a << "\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--rounds") o.rounds = std::stoi(next());
    else if (a == "--seed") { o.seed = std::stoull(next()); o.seed_given = true; }
    else if (a == "--partitions") o.partitions = std::stoi(next());
    else if (a == "--max-kill-delay-ms") o.max_kill_delay_ms = std::stoi(next());
    else {
      std::cerr << "usage: crash_test [--rounds N] [--seed N] [--partitions N] [--max-kill-delay-ms N]\n";
      std::exit(2);
    }
  }
  if (!o.seed_given)
    o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return o;
}

struct number_state {
  int32_t partition = -1;
  bool acked = false;
  bool acked_before_kill = false;
  int64_t offset = -1;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__IN_PROGRESS;
};

struct totals {
  size_t produced = 0, acked = 0, acked_before_kill = 0, failed = 0;
};

int64_t number_of(const record& r) {
  if (!r.value || r.value->size() < 2 || (*r.value)[0] != 'n') return -1;
  try {
    return std::stoll(r.value->substr(1));
  } catch (...) {
    return -1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  options opt = parse(argc, argv);
  std::cout << "crash_test: seed " << opt.seed << " (rerun with --seed " << opt.seed << "), rounds " << opt.rounds
            << ", partitions " << opt.partitions << ", kill delay 0.." << opt.max_kill_delay_ms << " ms" << std::endl;
  if (broker_binary().empty()) {
    std::cout << "SKIPPED: no sluice binary (set SLUICE_BINARY)" << std::endl;
    return 77;
  }
  std::mt19937_64 rng(opt.seed);
  const std::string topic = "crash";
  const auto test_start = clock_type::now();

  broker_process broker({{"broker.id", "1"}, {"num.partitions", "1"}, {"auto.create.topics.enable", "false"}});
  std::vector<std::string> failures;
  auto fail = [&](const std::string& f) {
    if (failures.size() < 50) std::cout << "FAIL: " << f << std::endl;
    failures.push_back(f);
  };

  std::vector<number_state> numbers;  // index = number
  totals tot;
  size_t lost_total = 0, corrupt_total = 0;
  size_t last_found = 0, last_dups = 0, last_unacked_present = 0;
  int rounds_done = 0;

  try {
    broker.start();
    std::string msg;
    rk_ptr admin = make_client(RD_KAFKA_PRODUCER, make_conf(broker.bootstrap(), {}));
    auto err = create_topic_with_configs(admin.get(), topic, opt.partitions, {{"flush.messages", "1"}}, &msg);
    admin.reset();
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) throw std::runtime_error("CreateTopics: " + err_name(err) + " " + msg);

    for (int round = 1; round <= opt.rounds && failures.empty(); ++round) {
      const int kill_delay_ms = std::uniform_int_distribution<int>(0, opt.max_kill_delay_ms)(rng);
      const size_t round_first = numbers.size();
      size_t acked_before_kill_round = 0;
      {
        producer prod(broker.bootstrap(), {{"acks", "all"},
                                           {"enable.idempotence", "false"},
                                           {"max.in.flight.requests.per.connection", "1"},
                                           {"linger.ms", "1"},
                                           {"retries", "1000"},
                                           {"retry.backoff.ms", "50"},
                                           {"request.timeout.ms", "5000"},
                                           {"message.timeout.ms", "20000"},
                                           {"log_level", "0"}});
        // Phase 1: produce until kill_delay_ms after the first acknowledgement of this round, then SIGKILL.
        std::optional<clock_type::time_point> first_ack_at;
        const auto phase_deadline = clock_type::now() + 10s;
        bool killed = false;
        while (clock_type::now() < phase_deadline) {
          if (prod.outstanding() < 200) {
            const size_t n = numbers.size();
            numbers.push_back({static_cast<int32_t>(n % static_cast<size_t>(opt.partitions))});
            ++tot.produced;
            auto e = prod.produce(topic, numbers[n].partition, n - round_first, std::nullopt, "n" + std::to_string(n),
                                  {});
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR) throw std::runtime_error("produce: " + err_name(e));
          }
          prod.poll(0);
          if (!first_ack_at && prod.acked() > 0) first_ack_at = clock_type::now();
          if (first_ack_at && clock_type::now() >= *first_ack_at + std::chrono::milliseconds(kill_delay_ms)) {
            broker.kill9();
            killed = true;
            break;
          }
          if (prod.outstanding() >= 200) prod.poll(1);
        }
        if (!killed) throw std::runtime_error("round " + std::to_string(round) + ": no acknowledgement within 10 s");
        // Everything acknowledged up to here was acknowledged by the broker that was just killed.
        for (size_t i = 0; i < prod.reports().size(); ++i) {
          const auto& r = prod.reports()[i];
          if (r.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            numbers[round_first + i].acked_before_kill = true;
            ++acked_before_kill_round;
          }
        }
        // Phase 2: restart at once; the producer retries what was in flight and sends what was queued.
        broker.start();
        if (!prod.flush(30s)) fail("round " + std::to_string(round) + ": producer still has " +
                                   std::to_string(prod.outstanding()) + " records without a delivery report after 30 s");
        for (size_t i = 0; i < prod.reports().size(); ++i) {
          const auto& r = prod.reports()[i];
          auto& ns = numbers[round_first + i];
          ns.err = r.err;
          if (r.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            ns.acked = true;
            ns.offset = r.offset;
            if (r.partition != ns.partition) fail("number " + std::to_string(round_first + i) + " reported on partition " +
                                                  std::to_string(r.partition));
          }
        }
      }
      size_t acked_round = 0, failed_round = 0;
      for (size_t n = round_first; n < numbers.size(); ++n) {
        if (numbers[n].acked) ++acked_round;
        else ++failed_round;
      }
      tot.acked += acked_round;
      tot.acked_before_kill += acked_before_kill_round;
      tot.failed += failed_round;

      // Verify everything produced so far.
      size_t acked_all = 0;
      for (const auto& ns : numbers) acked_all += ns.acked ? 1 : 0;
      consumed c = consume_all(broker.bootstrap(), topic, opt.partitions, acked_all, 30s, RD_KAFKA_OFFSET_BEGINNING,
                               {{"log_level", "3"}});
      const size_t corrupt = c.errors.size();
      for (const auto& e : c.errors) fail("round " + std::to_string(round) + ": consumer error " + e);
      std::map<int64_t, int> seen_count;
      std::map<std::pair<int32_t, int64_t>, int64_t> at_offset;  // (partition, offset) -> number
      size_t dups = 0;
      for (const auto& [p, recs] : c.by_partition) {
        int64_t expect_offset = 0, last_first = -1;
        for (const auto& r : recs) {
          if (r.offset != expect_offset) {
            fail("round " + std::to_string(round) + ": partition " + std::to_string(p) + " offset " +
                 std::to_string(r.offset) + " where " + std::to_string(expect_offset) + " was expected (gap)");
            expect_offset = r.offset;
          }
          ++expect_offset;
          const int64_t n = number_of(r);
          if (n < 0 || n >= static_cast<int64_t>(numbers.size())) {
            fail("round " + std::to_string(round) + ": p" + std::to_string(p) + "@" + std::to_string(r.offset) +
                 " holds a record that was never produced: " + (r.value ? r.value->substr(0, 40) : "<null>"));
            continue;
          }
          if (numbers[static_cast<size_t>(n)].partition != p)
            fail("number " + std::to_string(n) + " found on partition " + std::to_string(p));
          at_offset[{p, r.offset}] = n;
          if (seen_count[n]++ == 0) {
            if (n <= last_first)
              fail("round " + std::to_string(round) + ": p" + std::to_string(p) + "@" + std::to_string(r.offset) +
                   ": number " + std::to_string(n) + " first appears after " + std::to_string(last_first));
            last_first = n;
          } else {
            ++dups;
          }
        }
      }
      size_t found = 0, lost = 0, unacked_present = 0;
      for (size_t n = 0; n < numbers.size(); ++n) {
        const auto& ns = numbers[n];
        const bool present = seen_count.count(static_cast<int64_t>(n)) > 0;
        if (!ns.acked) {
          if (present) ++unacked_present;
          continue;
        }
        if (!present) {
          ++lost;
          fail("round " + std::to_string(round) + ": acknowledged number " + std::to_string(n) + " (p" +
               std::to_string(ns.partition) + "@" + std::to_string(ns.offset) + (ns.acked_before_kill ? ", acked before the kill" : "") +
               ") is missing");
          continue;
        }
        ++found;
        auto it = at_offset.find({ns.partition, ns.offset});
        if (it == at_offset.end() || it->second != static_cast<int64_t>(n))
          fail("round " + std::to_string(round) + ": p" + std::to_string(ns.partition) + "@" + std::to_string(ns.offset) +
               " (acknowledged offset of number " + std::to_string(n) + ") holds " +
               (it == at_offset.end() ? std::string("nothing") : std::to_string(it->second)));
      }
      lost_total = lost;
      corrupt_total += corrupt;
      last_found = found;
      last_dups = dups;
      last_unacked_present = unacked_present;
      rounds_done = round;
      std::cout << "round " << round << ": kill after " << kill_delay_ms << " ms; produced " << (numbers.size() - round_first)
                << ", acked before kill " << acked_before_kill_round << ", acked " << acked_round << ", failed "
                << failed_round << " | log: " << c.total() << " records, acked found " << found << "/" << acked_all
                << ", lost " << lost << ", corrupt " << corrupt << ", dup " << dups << ", unacked_present "
                << unacked_present << std::endl;
    }
    if (broker.running()) {
      int st = broker.stop();
      if (!broker_process::exited_cleanly(st)) fail("broker exit status on SIGTERM: " + broker_process::describe_status(st));
    }
  } catch (const std::exception& e) {
    fail(std::string("exception: ") + e.what());
  }

  const double secs = std::chrono::duration<double>(clock_type::now() - test_start).count();
  std::cout << "crash_test figures: seed " << opt.seed << ", rounds " << rounds_done << "/" << opt.rounds
            << ", produced " << tot.produced << ", acknowledged " << tot.acked << " (before a kill "
            << tot.acked_before_kill << "), delivery failures " << tot.failed << ", found " << last_found
            << ", lost " << lost_total << ", corrupt " << corrupt_total << ", duplicates " << last_dups
            << ", unacked_present " << last_unacked_present << ", " << secs << " s" << std::endl;
  if (!failures.empty()) {
    broker.keep();
    std::string log = broker.log_text();
    std::cout << "---- broker log (" << broker.log_path() << ", data kept in " << broker.dir() << ") ----\n"
              << (log.size() > 20000 ? log.substr(log.size() - 20000) : log) << "\n---- end of broker log ----\n";
    std::cout << "FAILED (" << failures.size() << " failures)" << std::endl;
    return 1;
  }
  std::cout << "PASS" << std::endl;
  return 0;
}
