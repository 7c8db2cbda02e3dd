#!/bin/bash
# The cost of TLS and SASL on one broker: the same produce+consume runs of sluice_bench over a PLAINTEXT, an SSL
# and a SASL_SSL (PLAIN) listener of one node, 4 partitions, 100 B and 1 KB records, acks 1 and -1. Prints one
# line per run: records/s of produce and consume, and the broker's CPU seconds over both (from /proc/PID/stat).
# Usage: bench/tls_cost.sh [build dir, default build]    (needs targets sluice and sluice_bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
work=$(mktemp -d /tmp/sluice-tls-cost-XXXXXX)
trap 'kill $broker 2>/dev/null || true; rm -rf "$work"' EXIT
bash "$root/tests/integration/security/make_certs.sh" "$work/certs" >/dev/null 2>&1
base=$(( 20000 + RANDOM % 20000 ))
cat > "$work/server.properties" <<CONF
log.dirs=$work/data
listeners=PLAINTEXT://127.0.0.1:$base,SSL://127.0.0.1:$((base+1)),SASL_SSL://127.0.0.1:$((base+2))
ssl.keystore.type=PEM
ssl.keystore.location=$work/certs/server-chain.pem
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";
CONF
"$build/broker/sluice" "$work/server.properties" > "$work/broker.log" 2>&1 &
broker=$!
sleep 0.5
ticks() { awk '{print $14+$15}' /proc/$broker/stat; }
hz=$(getconf CLK_TCK)
printf '%-6s %-4s %-9s %14s %14s %12s\n' size acks listener produce_rec/s consume_rec/s broker_cpu_s
for size in 100 1024; do
  n=$([ "$size" = 100 ] && echo 2000000 || echo 500000)
  for acks in 1 -1; do
    for listener in PLAINTEXT SSL SASL_SSL; do
      case $listener in
        PLAINTEXT) args=(--bootstrap 127.0.0.1:$base) ;;
        SSL) args=(--bootstrap 127.0.0.1:$((base+1)) -X security.protocol=SSL -X ssl.ca.location=$work/certs/ca.pem) ;;
        SASL_SSL) args=(--bootstrap 127.0.0.1:$((base+2)) -X security.protocol=SASL_SSL -X ssl.ca.location=$work/certs/ca.pem
                        -X sasl.mechanisms=PLAIN -X sasl.username=alice -X sasl.password=alice-secret) ;;
      esac
      t0=$(ticks)
      out=$(timeout 300 "$build/bench/sluice_bench" "${args[@]}" --mode produce,consume --records "$n" --size "$size" \
            --acks "$acks" --partitions 4)
      t1=$(ticks)
      p=$(echo "$out" | grep '^mode=produce' | sed 's/.*records_per_s=\([0-9]*\).*/\1/')
      c=$(echo "$out" | grep '^mode=consume' | sed 's/.*records_per_s=\([0-9]*\).*/\1/')
      printf '%-6s %-4s %-9s %14s %14s %12s\n' "$size" "$acks" "$listener" "$p" "$c" \
        "$(awk -v t=$((t1 - t0)) -v hz="$hz" 'BEGIN{printf "%.2f", t/hz}')"
    done
  done
done
