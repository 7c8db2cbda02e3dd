#include "broker/producer_id_manager.h"

#include "base/logging.h"

namespace sluice::broker {

result<int64_t> producer_id_manager::generate_producer_id() {
  std::lock_guard lock(mutex_);
  if (!block_ || next_ > block_->last) {
    auto b = store_.allocate_producer_id_block(broker_id_);
    if (!b) return b.err();
    block_ = *b;
    next_ = b->first;
    log::info("reserved producer id block [{}, {}] for broker {}", b->first, b->last, broker_id_);
  }
  return next_++;
}

}  // namespace sluice::broker
