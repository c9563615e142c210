#!/usr/bin/env bash
# The key-holding proxy on loopback: time to the first byte of a streamed answer through it
# against straight to the server (median of 50), and a 100 MB streamed answer through it
# (chunked server-sent events; median of 3). `examples/proxy_bench.rs` does the measuring.
#   bench/proxy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet --example proxy_bench
