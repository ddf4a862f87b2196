/**
 * `connect()`: a postgres.js client configured for sluice.
 *
 * @module
 */

import postgres, { type Sql } from "./postgres.ts";

/**
 * Options of {@linkcode connect}.
 *
 * @example Usage
 * ```ts
 * import type { ConnectOptions } from "@sluice/sluice";
 *
 * const options: ConnectOptions = { max: 2, applicationName: "orders-producer" };
 * ```
 */
export interface ConnectOptions {
  /**
   * Largest number of connections in the pool.
   *
   * @default {4}
   */
  readonly max?: number;
  /**
   * `application_name` reported to PostgreSQL (a URL parameter `application_name` wins).
   *
   * @default {"sluice"}
   */
  readonly applicationName?: string;
  /**
   * Seconds to wait for a connection to open.
   *
   * @default {30}
   */
  readonly connectTimeoutSeconds?: number;
}

/**
 * Opens a postgres.js client for sluice: no prepared statements (so it works through Supabase's
 * transaction pooler), a small pool, notices discarded. `bigint` values such as message ids come
 * back as decimal strings. Close it with `await sql.end()`.
 *
 * @param url A PostgreSQL connection URL.
 * @param options Pool size, application name and connect timeout.
 * @returns The client.
 * @throws {RangeError} When an option is out of range.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const [{ now }] = await sql`select now()`;
 * await sql.end();
 * ```
 */
export function connect(url: string, options: ConnectOptions = {}): Sql {
  if (typeof url !== "string" || url === "") {
    throw new TypeError("Cannot connect: the connection URL must be a non-empty string");
  }
  const max = options.max ?? 4;
  if (!Number.isInteger(max) || max < 1) {
    throw new RangeError(`Cannot connect: max must be an integer >= 1, got ${String(max)}`);
  }
  const connectTimeout = options.connectTimeoutSeconds ?? 30;
  if (!(connectTimeout > 0) || !Number.isFinite(connectTimeout)) {
    throw new RangeError(
      `Cannot connect: connectTimeoutSeconds must be a positive number, got ${
        String(connectTimeout)
      }`,
    );
  }
  return postgres(url, {
    prepare: false,
    max,
    connect_timeout: connectTimeout,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? "sluice" },
  });
}
