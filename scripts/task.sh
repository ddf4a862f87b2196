#!/usr/bin/env bash
# Runs `deno task <name> [args]` with the pinned toolchain, installing it first when missing.
# Usage: bash scripts/task.sh test | bash scripts/task.sh demo
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DENO="$(bash "$ROOT/scripts/setup.sh" | tail -1)"
# Some networks intercept TLS with a locally trusted CA: trust the system store as well.
export DENO_TLS_CA_STORE="${DENO_TLS_CA_STORE:-system,mozilla}"
export PATH="$(dirname "$DENO"):$PATH"
cd "$ROOT"
exec "$DENO" task "$@"
