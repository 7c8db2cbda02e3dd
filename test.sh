#!/usr/bin/env bash
# Builds Sluice with its tests and runs the whole suite with ctest (unit, integration with real clients).
# Exits non-zero when any test fails. Extra arguments go to ctest (e.g. -L unit, -R kcat).
set -euo pipefail
SLUICE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$SLUICE_ROOT/tools/deps.sh"
sluice_install_deps "${SLUICE_TEST_PACKAGES[@]}"
sluice_build "$SLUICE_ROOT/build-tests" -DSLUICE_BUILD_TESTS=ON
cd "$SLUICE_ROOT/build-tests"
ctest --output-on-failure --timeout 600 -j 2 "$@"
