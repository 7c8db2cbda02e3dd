#pragma once
// A temporary directory per fuzzer process, for targets that feed file readers (index_fuzz, znode_fuzz): made by
// make_fuzz_temp_dir() in LLVMFuzzerInitialize, removed at exit.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace sluice::fuzz {

/// The process's directory (empty until make_fuzz_temp_dir()).
inline std::filesystem::path& fuzz_temp_dir() {
  static std::filesystem::path dir;
  return dir;
}

/// Makes `<tmp>/sluice-<name>-XXXXXX` and registers its removal at exit; exits 2 when it cannot.
inline void make_fuzz_temp_dir(const char* name) {
  std::string pattern = (std::filesystem::temp_directory_path() / ("sluice-" + std::string(name) + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror(name);
    std::exit(2);
  }
  fuzz_temp_dir() = pattern;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(fuzz_temp_dir(), ec);
  });
}

}  // namespace sluice::fuzz
