#!/usr/bin/env bash
# Installs the pinned Deno from the npm registry into .tools/ when `deno` is not on PATH, the
# pinned Supabase CLI from the npm registry into .tools/supabase, PostgreSQL server binaries from
# Debian packages when none are found, Debian's PgBouncer (the transaction-pooler test) and
# Chromium (the dashboard's browser tests) when there are none. Writes .tools/bin/deno and .tools/bin/supabase, launchers for both tools: put
# .tools/bin first on PATH (the script prints the line to paste), then `deno task test` and
# `supabase` work. Prints the launchers' directory on its last line.
set -euo pipefail
DENO_VERSION="2.5.6"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"

log() { echo "setup: $*" >&2; }

find_deno() {
  if [[ -x "$TOOLS/node_modules/@deno/linux-x64-glibc/deno" ]]; then
    echo "$TOOLS/node_modules/@deno/linux-x64-glibc/deno"
  else
    # Skip our own launcher, which would otherwise find itself.
    PATH="$(tr ':' '\n' <<<"$PATH" | grep -vxF "$TOOLS/bin" | paste -sd: -)" command -v deno || true
  fi
}

DENO="$(find_deno)"
if [[ -z "$DENO" ]]; then
  log "deno not found on PATH; installing deno@$DENO_VERSION from the npm registry into $TOOLS"
  mkdir -p "$TOOLS"
  npm install --prefix "$TOOLS" --no-save --no-audit --no-fund --loglevel=error "deno@$DENO_VERSION" >&2
  DENO="$(find_deno)"
  [[ -n "$DENO" ]] || { log "installing deno@$DENO_VERSION failed: no binary under $TOOLS"; exit 1; }
  log "installed $("$DENO" --version | head -1) at $DENO"
else
  log "using $("$DENO" --version | head -1) at $DENO"
fi

have_pg() {
  command -v initdb >/dev/null 2>&1 && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

# Installs a Debian package when running as root with apt-get; returns 1 where it cannot.
apt_install() {
  [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1 || return 1
  log "installing Debian package $1 ($2)"
  [[ -n "${APT_UPDATED:-}" ]] || { apt-get update >&2 && APT_UPDATED=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$1" >&2
}

if [[ -z "${DATABASE_URL:-}" ]] && ! have_pg; then
  if apt_install postgresql "no PostgreSQL server binaries found"; then
    log "installed PostgreSQL: $(ls -d /usr/lib/postgresql/*/bin | tr '\n' ' ')"
  else
    # The demo, sluice dev and the testing kit run on the embedded database without them
    # (docs/embedded.md); the test suite runs its embedded subset (scripts/_embedded_subset.ts).
    log "skipped PostgreSQL server binaries: none found and none can be installed here (no root" \
      "or no apt-get). 'deno task demo' and 'sluice dev' run on the embedded database;" \
      "'deno task test' runs only its embedded subset; the full suite needs a server" \
      "('apt-get install postgresql' as root, or DATABASE_URL)"
  fi
fi

# pg_cron (Supabase runs it) for the test of scheduled runs fired by pg_cron alone; Debian packages
# it for its own PostgreSQL 15 only.
if [[ -x /usr/lib/postgresql/15/bin/initdb && ! -f /usr/lib/postgresql/15/lib/pg_cron.so ]]; then
  if apt_install postgresql-15-cron "the pg_cron schedules test needs it"; then
    log "installed pg_cron for PostgreSQL 15"
  else
    log "no pg_cron: the pg_cron schedules test is skipped (CI=true fails it); run 'apt-get install postgresql-15-cron' as root"
  fi
fi

# PgBouncer in transaction mode (what Supabase's transaction pooler is) for the test of co-hosted
# workers behind a transaction pooler (tests/edge/cohosting_pool_test.ts).
if ! command -v pgbouncer >/dev/null 2>&1 && [[ ! -x /usr/sbin/pgbouncer ]]; then
  if apt_install pgbouncer "the transaction-pooler test needs it"; then
    log "installed $(/usr/sbin/pgbouncer --version 2>/dev/null | head -1 || echo pgbouncer)"
  else
    log "no PgBouncer: the transaction-pooler test is skipped (CI=true fails it); run 'apt-get install pgbouncer' as root"
  fi
fi

# The Supabase CLI, for the tests of sluice inside a user's Supabase project (its migration
# runner against a throwaway cluster); the npm package ships the binary, no network at run time.
SUPABASE_VERSION="2.122.1"
if [[ "$("$TOOLS/supabase/node_modules/.bin/supabase" --version 2>/dev/null)" != "$SUPABASE_VERSION" ]]; then
  log "installing supabase@$SUPABASE_VERSION (the Supabase CLI) from the npm registry into $TOOLS/supabase"
  # Its own prefix: npm prunes what a prefix's package.json does not list, Deno included.
  mkdir -p "$TOOLS/supabase"
  npm install --prefix "$TOOLS/supabase" --no-save --no-audit --no-fund --loglevel=error \
    "supabase@$SUPABASE_VERSION" >&2
fi

have_chromium() {
  [[ -n "${SLUICE_CHROMIUM:-}" ]] && return 0
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
    command -v google-chrome >/dev/null 2>&1
}

if ! have_chromium; then
  if apt_install chromium "no Chromium found; the dashboard's browser tests need one"; then
    log "installed $(chromium --version 2>/dev/null || echo chromium)"
  else
    log "no Chromium found: the dashboard's browser tests are skipped (CI=true fails them); run 'apt-get install chromium' as root"
  fi
fi

mkdir -p "$TOOLS/bin"
# Some networks intercept TLS with a locally trusted CA: Deno then needs the system store too to
# fetch npm packages. `deno task` runs its tasks with the same binary and this environment.
cat >"$TOOLS/bin/deno" <<LAUNCHER
#!/usr/bin/env bash
export DENO_TLS_CA_STORE="\${DENO_TLS_CA_STORE:-system,mozilla}"
exec "$DENO" "\$@"
LAUNCHER
chmod +x "$TOOLS/bin/deno"
cat >"$TOOLS/bin/supabase" <<LAUNCHER
#!/usr/bin/env bash
exec "$TOOLS/supabase/node_modules/.bin/supabase" "\$@"
LAUNCHER
chmod +x "$TOOLS/bin/supabase"

case ":$PATH:" in
  *":$TOOLS/bin:"*) log "deno and supabase are on PATH ($TOOLS/bin)" ;;
  *) log "put deno and supabase on PATH: export PATH=\"$TOOLS/bin:\$PATH\"" ;;
esac
echo "$TOOLS/bin"
