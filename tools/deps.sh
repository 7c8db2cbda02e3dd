# Sourced by run.sh and test.sh: installs the Debian 12 packages Sluice needs that are not installed yet.
# Nothing is downloaded from anywhere but Debian's package archive.
SLUICE_PACKAGES=(
  g++ cmake ninja-build pkg-config python3
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libspdlog-dev libfmt-dev
  libgtest-dev librdkafka-dev kcat python3-kafka
  strace python3-venv maven python3-yaml python3-jsonschema
  zookeeper libzookeeper-mt-dev
  python3-confluent-kafka make gcc dpkg-dev rapidjson-dev zlib1g-dev libssl-dev libzstd-dev liblz4-dev libsnappy-dev
  libre2-dev
)
# Only the test command needs these (test.sh passes them): Chromium for the web console's browser test
# (tests/console/console_test.py, driven by playwright-core from tests/console/package-lock.json); clang and its
# libFuzzer runtime for the fuzz targets (tests/fuzz, build-fuzz); nftables for the chaos runner (tests/chaos).
SLUICE_TEST_PACKAGES=(chromium clang libclang-rt-14-dev nftables)

# sluice_install_deps [more packages...]: SLUICE_PACKAGES and the ones given.
sluice_install_deps() {
  local missing=()
  for p in "${SLUICE_PACKAGES[@]}" "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "Installing missing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "Not root and no sudo: install these packages first: ${missing[*]}" >&2; return 1; fi
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

sluice_build() {
  local dir="$1"; shift
  # ccache, when a developer has it, is shared between checkouts: paths are hashed relative to the root.
  local launcher=()
  if command -v ccache >/dev/null; then
    # NOHASHDIR: with -g ccache hashes the working directory by default, so worktrees never shared a hit.
    export CCACHE_BASEDIR="$SLUICE_ROOT" CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_NOHASHDIR=true
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # -g1: line tables and function names (backtraces, perf, gdb's bt), no variable info. A third less compile time
  # than -g and a fifth of the object size (broker/handlers/fetch.cc: 10.3 s and 2 MB against 15.2 s and 9.4 MB);
  # a developer who wants full debug info passes -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" after the dir.
  cmake -S "$SLUICE_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "$@" >/dev/null &&
    cmake --build "$dir" -j "$(nproc)"
}
