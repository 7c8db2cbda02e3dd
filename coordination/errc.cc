// The std::error_category of each error enum of the coordination library: cluster_store's errc,
// cluster_view's view_errc, replica assignment's assignment_errc and the ZooKeeper folder's zk_errc.
#include <string>

#include "coordination/cluster_store.h"
#include "coordination/cluster_view.h"
#include "coordination/replica_assignment.h"
#include "coordination/zk/znodes.h"

namespace sluice::coordination {

namespace {

/// One category: a fixed name and the value names of one enum (values outside it read "unknown").
template <typename Enum>
class enum_category final : public std::error_category {
 public:
  using namer = const char* (*)(Enum);
  enum_category(const char* name, namer value_name) : name_(name), value_name_(value_name) {}
  const char* name() const noexcept override { return name_; }
  std::string message(int value) const override { return value_name_(static_cast<Enum>(value)); }

 private:
  const char* name_;
  namer value_name_;
};

const char* errc_name(errc e) {
  switch (e) {
    case errc::ok: return "ok";
    case errc::topic_exists: return "topic_exists";
    case errc::unknown_topic: return "unknown_topic";
    case errc::io_error: return "io_error";
  }
  return "unknown";
}

const char* view_errc_name(view_errc e) {
  switch (e) {
    case view_errc::version_conflict: return "version_conflict";
    case view_errc::not_registered: return "not_registered";
    case view_errc::timeout: return "timeout";
    case view_errc::unavailable: return "unavailable";
    case view_errc::not_a_replica: return "not_a_replica";
    case view_errc::not_supported: return "not_supported";
    case view_errc::not_controller: return "not_controller";
  }
  return "unknown";
}

const char* assignment_errc_name(assignment_errc e) {
  switch (e) {
    case assignment_errc::invalid_replication_factor: return "invalid_replication_factor";
    case assignment_errc::invalid_partitions: return "invalid_partitions";
  }
  return "unknown";
}

const char* zk_errc_name(zk::zk_errc e) {
  switch (e) {
    case zk::zk_errc::malformed: return "malformed";
    case zk::zk_errc::registration_conflict: return "registration_conflict";
    case zk::zk_errc::zookeeper_error: return "zookeeper_error";
  }
  return "unknown";
}

}  // namespace

const std::error_category& coordination_category() noexcept {
  static const enum_category<errc> instance("coordination", errc_name);
  return instance;
}

const std::error_category& view_category() noexcept {
  static const enum_category<view_errc> instance("cluster_view", view_errc_name);
  return instance;
}

const std::error_category& assignment_category() noexcept {
  static const enum_category<assignment_errc> instance("assignment", assignment_errc_name);
  return instance;
}

namespace zk {

const std::error_category& zk_category() noexcept {
  static const enum_category<zk_errc> instance("zookeeper", zk_errc_name);
  return instance;
}

}  // namespace zk

}  // namespace sluice::coordination
