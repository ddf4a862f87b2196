#!/usr/bin/env bash
# Installs the pinned Deno from the npm registry into .tools/ when `deno` is not on PATH, the
# pinned Supabase CLI from the npm registry into .tools/, and PostgreSQL server binaries from Debian packages when none are found. Writes .tools/bin/deno,
# a launcher for that Deno: put .tools/bin first on PATH, then `deno task test` works.
# Prints the launcher's directory on its last line.
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

if [[ -z "${DATABASE_URL:-}" ]] && ! have_pg; then
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
    log "no PostgreSQL server binaries found; installing Debian package postgresql"
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
    log "installed PostgreSQL: $(ls -d /usr/lib/postgresql/*/bin | tr '\n' ' ')"
  else
    log "no PostgreSQL server binaries found: run 'apt-get install postgresql' as root, or set DATABASE_URL"
    exit 1
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

mkdir -p "$TOOLS/bin"
# Some networks intercept TLS with a locally trusted CA: Deno then needs the system store too to
# fetch npm packages. `deno task` runs its tasks with the same binary and this environment.
cat >"$TOOLS/bin/deno" <<LAUNCHER
#!/usr/bin/env bash
export DENO_TLS_CA_STORE="\${DENO_TLS_CA_STORE:-system,mozilla}"
exec "$DENO" "\$@"
LAUNCHER
chmod +x "$TOOLS/bin/deno"

echo "$TOOLS/bin"
