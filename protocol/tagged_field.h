#pragma once
// raw_tagged_field: one tagged field (KIP-482) that a message definition does not know, kept as its tag
// and payload bytes so that a decode -> encode round trip writes it back unchanged, as Kafka's generated
// messages keep `_unknownTaggedFields`. Generated structs of flexible messages hold them in
// `unknown_tagged_fields`, in the order read; encode() writes them interleaved with the known tagged
// fields in increasing tag order (the wire order KIP-482 requires).
#include <cstdint>
#include <vector>

namespace sluice::protocol {

struct raw_tagged_field {
  uint32_t tag = 0;
  std::vector<uint8_t> data;  // the payload, without the tag and size varints
  friend bool operator==(const raw_tagged_field&, const raw_tagged_field&) = default;
};

}  // namespace sluice::protocol
