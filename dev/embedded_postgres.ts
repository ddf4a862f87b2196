/**
 * An embedded PostgreSQL for development and tests: PGlite (PostgreSQL compiled to WebAssembly)
 * inside this process, served over the wire protocol on a free loopback port by a small bridge
 * here, so that postgres.js, the migrations and the workers run against it unchanged.
 *
 * What it is not: a server. PGlite is one backend session; the bridge multiplexes every client
 * connection onto it, one protocol exchange at a time (up to a Sync or a simple Query, so that an
 * extended-protocol statement's Parse/Bind/Execute are never interleaved with another
 * connection's; `@electric-sql/pglite-socket` 0.2 does interleave them, which fails with
 * "unnamed prepared statement does not exist"), and an open transaction keeps the session until
 * it ends. So
 * statements never run in parallel; notifications are routed by the bridge to the connections that
 * LISTEN on their channel, so workers wake on new messages and `waitForRun` follows events (do not
 * use a worker's `listen: false`, whose `pgmq.read_with_poll` would hold the one session for
 * seconds); and the database lives only as long as this process. One process, development and tests only (docs/embedded.md).
 *
 * Development infrastructure, like `dev/temp_postgres.ts`: not part of the published package.
 *
 * @module
 */

import {
  startEmbeddedPostgres,
  type StartEmbeddedPostgresOptions,
} from "../src/embedded/embedded_postgres.ts";
import {
  PostgresNotFoundError,
  startTempPostgres,
  type StartTempPostgresOptions,
} from "./temp_postgres.ts";

export {
  type EmbeddedPostgres,
  startEmbeddedPostgres,
  type StartEmbeddedPostgresOptions,
} from "../src/embedded/embedded_postgres.ts";

/** A database for a local run: a throwaway server or an embedded one. */
export interface DevPostgres extends AsyncDisposable {
  /** Connection URL. */
  url: string;
  /** The TCP port on 127.0.0.1. */
  port: number;
  /** Whether this is the embedded database (see the module's notes). */
  embedded: boolean;
  /** Stops it. Safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Whether embedded mode is forced: `SLUICE_EMBEDDED` is `1` or `true`.
 *
 * @param env Where to read the variable.
 */
export function embeddedForced(env: Deno.Env = Deno.env): boolean {
  const value = env.get("SLUICE_EMBEDDED") ?? "";
  return value === "1" || value === "true";
}

/** Options of {@linkcode startDevPostgres}. */
export interface StartDevPostgresOptions extends StartEmbeddedPostgresOptions {
  /** Where to look for server binaries (see `startTempPostgres`). */
  server?: StartTempPostgresOptions;
}

/**
 * Starts a database for a local run: the embedded one when `SLUICE_EMBEDDED=1`, else a throwaway
 * server, falling back to the embedded one when no server binaries are installed.
 *
 * @param options Persistence for the embedded database (`SLUICE_EMBEDDED_DIR` when not given),
 * where to look for server binaries.
 */
export async function startDevPostgres(
  options: StartDevPostgresOptions = {},
): Promise<DevPostgres> {
  const embeddedOptions = {
    dataDir: options.dataDir ?? (Deno.env.get("SLUICE_EMBEDDED_DIR") || undefined),
  };
  if (!embeddedForced()) {
    try {
      const server = await startTempPostgres(options.server);
      return {
        url: server.url,
        port: server.port,
        embedded: false,
        stop: server.stop,
        [Symbol.asyncDispose]: server.stop,
      };
    } catch (error) {
      if (!(error instanceof PostgresNotFoundError)) throw error;
    }
  }
  const db = await startEmbeddedPostgres(embeddedOptions);
  return {
    url: db.url,
    port: db.port,
    embedded: true,
    stop: db.stop,
    [Symbol.asyncDispose]: db.stop,
  };
}
