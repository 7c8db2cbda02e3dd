#pragma once
// What `sluice --version` prints: the project version and the git revision the binary was built from.
// Both are written at build time into a generated build_version.cc (broker/build_version.cmake).

namespace sluice::broker {

/// The project's version, CMakeLists.txt's `project(sluice VERSION x.y.z)`, e.g. "0.1.0".
const char* build_version();

/// The source tree's revision when this binary was built: `git rev-parse --short HEAD`, with "-dirty" appended
/// when tracked files differed from HEAD, or "unknown" when the source tree is not a git checkout (a tarball)
/// or git is missing. Refreshed by every build, so a new commit relinks the binary without a full rebuild.
const char* build_revision();

}  // namespace sluice::broker
