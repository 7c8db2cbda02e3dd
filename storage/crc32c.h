#pragma once
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of the v2 record batch (KIP-98).
// Uses the SSE4.2 crc32 instruction when the CPU has it, a slicing-by-8 table otherwise.
#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice::storage {

/// CRC32C of `data`. crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::span<const uint8_t> data);

/// Continues a CRC32C: crc32c_extend(crc32c(a), b) == crc32c(a ++ b). Start from 0.
uint32_t crc32c_extend(uint32_t crc, const uint8_t* data, size_t size);

namespace detail {
/// The two implementations, exposed so tests can compare them on every machine.
uint32_t crc32c_software(uint32_t crc, const uint8_t* data, size_t size);
uint32_t crc32c_hardware(uint32_t crc, const uint8_t* data, size_t size);  // only if hardware_crc32c()
bool hardware_crc32c();
}  // namespace detail

}  // namespace sluice::storage
