#!/usr/bin/env bash
# Builds Sluice and starts one broker on the embedded single-node default: no ZooKeeper, listening on
# 127.0.0.1:9092 and [::1]:9092, data under ./data. Extra arguments key=value become --override key=value
# (Kafka's server.properties keys); other arguments (--config FILE, --override k=v) pass through as given.
set -euo pipefail
SLUICE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$SLUICE_ROOT/tools/deps.sh"
sluice_install_deps
sluice_build "$SLUICE_ROOT/build" -DSLUICE_BUILD_TESTS=OFF
args=()
for a in "$@"; do
  if [[ "$a" == *=* && "$a" != --* ]]; then args+=(--override "$a"); else args+=("$a"); fi
done
exec "$SLUICE_ROOT/build/broker/sluice" --override log.dirs=./data "${args[@]}"
