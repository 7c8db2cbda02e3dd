#!/usr/bin/env bash
# Builds Sluice with its tests and runs the whole suite with ctest (unit, integration with real clients).
# Exits non-zero when any test fails. Extra arguments go to ctest (e.g. -L unit, -R kcat).
set -euo pipefail
SLUICE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$SLUICE_ROOT/tools/deps.sh"
sluice_install_deps "${SLUICE_TEST_PACKAGES[@]}"
sluice_build "$SLUICE_ROOT/build-tests" -DSLUICE_BUILD_TESTS=ON
# The libFuzzer targets (tests/fuzz/README.md): a clang build of the fuzzers and the libraries they reach only.
CC=clang CXX=clang++ cmake -S "$SLUICE_ROOT" -B "$SLUICE_ROOT/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSLUICE_FUZZ=ON -DSLUICE_BUILD_TESTS=ON >/dev/null
cmake --build "$SLUICE_ROOT/build-fuzz" -j "$(nproc)" --target fuzz_targets
status=0
(cd "$SLUICE_ROOT/build-tests" && ctest --output-on-failure --timeout 600 -j 2 "$@") || status=$?
# Short bounded fuzz runs and every kept crash input (label fuzz); with arguments, only what they select.
(cd "$SLUICE_ROOT/build-fuzz" && ctest --output-on-failure --timeout 600 -j 2 -L fuzz "$@") || status=$?
exit $status
