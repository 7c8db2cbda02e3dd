// libFuzzer target: the readers of a partition directory's small files (storage/): offset index, time index,
// transaction index, leader-epoch-checkpoint, offset checkpoints (recovery-point-offset-checkpoint and the like)
// and producer-state snapshots. What a broker reads at start from a disk that may hold anything.
//
// Input: [reader byte] [file bytes...]. Reader (byte % 7): 0 offset index, 1 time index, 2 transaction index,
// 3 leader-epoch-checkpoint, 4 offset checkpoint, 5 producer snapshot bytes (decode_snapshot) with the header's
// magic, version and CRC fixed up so that the entries are parsed, 6 the snapshot file as it is, loaded by
// producer_state_manager::load_latest_snapshot. Files go to a temporary directory of this process.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "fuzz_temp_dir.h"
#include "storage/byte_order.h"
#include "storage/crc32c.h"
#include "storage/leader_epoch_cache.h"
#include "storage/offset_checkpoint.h"
#include "storage/offset_index.h"
#include "storage/producer_state.h"
#include "storage/time_index.h"
#include "storage/transaction_index.h"

namespace fs = std::filesystem;
using namespace sluice::storage;

using sluice::fuzz::fuzz_temp_dir;

namespace {

void write_file(const fs::path& p, std::span<const uint8_t> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void clear_dir(const fs::path& d) {
  std::error_code ec;
  fs::remove_all(d, ec);
  fs::create_directories(d, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sluice::fuzz::make_fuzz_temp_dir("index-fuzz");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int which = data[0] % 7;
  std::span<const uint8_t> bytes(data + 1, size - 1);
  const fs::path dir = fuzz_temp_dir() / "p";
  clear_dir(dir);
  switch (which) {
    case 0: {
      const auto file = dir / "00000000000000000100.index";
      write_file(file, bytes);
      if (auto idx = offset_index::open(file, 100)) {
        (void)idx->sane(1 << 20);
        (void)idx->lookup(150);
        (void)idx->lookup(INT64_MAX);
        (void)idx->truncate_to(120);
        idx->close();
      }
      break;
    }
    case 1: {
      const auto file = dir / "00000000000000000100.timeindex";
      write_file(file, bytes);
      if (auto idx = time_index::open(file, 100)) {
        (void)idx->sane();
        (void)idx->lookup(1000);
        (void)idx->lookup(INT64_MIN);
        (void)idx->last_entry();
        (void)idx->truncate_to(120);
        idx->close();
      }
      break;
    }
    case 2: {
      const auto file = dir / "00000000000000000100.txnindex";
      write_file(file, bytes);
      if (auto idx = transaction_index::open(file)) {
        std::vector<aborted_txn> out;
        (void)idx->collect_aborted(0, INT64_MAX, out);
        (void)idx->truncate_to(150);
        idx->close();
      }
      break;
    }
    case 3: {
      write_file(dir / leader_epoch_checkpoint_file, bytes);
      if (auto cache = leader_epoch_cache::load(dir)) {
        (void)cache->end_offset_for(cache->latest_epoch(), 1000);
        (void)cache->end_offset_for(0, 1000);
        (void)cache->truncate_from_end(10);
        (void)cache->truncate_from_start(5);
      }
      break;
    }
    case 4: {
      const auto file = dir / "recovery-point-offset-checkpoint";
      write_file(file, bytes);
      (void)read_offset_checkpoint(file);
      break;
    }
    case 5: {
      // The header of a snapshot of an empty state: magic and version, then the CRC over the rest.
      static const std::vector<uint8_t> empty = producer_state_manager(fuzz_temp_dir(), 1000).encode_snapshot();
      std::vector<uint8_t> snap(bytes.begin(), bytes.end());
      if (snap.size() < empty.size()) snap.resize(empty.size(), 0);
      std::copy(empty.begin(), empty.begin() + 6, snap.begin());
      detail::store_be<uint32_t>(snap.data() + 6, crc32c(std::span<const uint8_t>(snap).subspan(10)));
      (void)producer_state_manager::decode_snapshot(snap);
      break;
    }
    case 6: {
      write_file(dir / "00000000000000000100.snapshot", bytes);
      producer_state_manager m(dir, 1000);
      if (m.load_latest_snapshot(INT64_MAX, 0)) (void)m.first_unstable_offset();
      break;
    }
  }
  return 0;
}
