/**
 * `connect()`: a postgres.js client configured for sluice.
 *
 * @module
 */

import { driverSocketFactory, type DriverTls } from "./driver/driver_socket.ts";
import postgres, { type Sql } from "./driver/postgres.ts";
import { closeGateOnEnd, noDriverBackoff } from "./driver/reconnect.ts";

export { TlsUpgradeError, type TlsUpgradeFailure } from "./driver/driver_socket.ts";

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
 * transaction pooler), a small pool, notices discarded, and connections that reconnect after a cut
 * even when the driver had a write buffered, waiting 50 ms doubling to at most 1 s between failed
 * connects (never the driver's 20 s), and none after `sql.end()` (docs/worker.md, "Database
 * outages"). `bigint` values
 * such as message ids come back as decimal strings. Close it with `await sql.end()`.
 *
 * @param url A PostgreSQL connection URL.
 * @param options Pool size, application name and connect timeout.
 * @returns The client.
 * @throws {RangeError} When an option is out of range.
 * @throws {TypeError} When `url` is empty, has no `postgres://` (or `postgresql://`) scheme, or is
 * not a valid connection URL (the message masks the password).
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
  // postgres.js reads a string without a scheme ("localhost:5651") as no URL at all and connects
  // to its defaults (127.0.0.1:5432) instead, silently: the wrong database, or a misleading
  // "connection refused".
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    const shown = redactPassword(url);
    throw new TypeError(
      `Cannot connect: the connection string ${JSON.stringify(shown)} has no postgres:// ` +
        `scheme, so it names no database; write it as postgres://user:password@host:port/database` +
        `${
          /^[^/:@]+:\d+$/.test(url) ? ` (here postgres://postgres:postgres@${url}/postgres)` : ""
        }`,
    );
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
  try {
    const settings = {
      prepare: false,
      max,
      connect_timeout: connectTimeout,
      onnotice: () => {},
      connection: { application_name: options.applicationName ?? "sluice" },
    };
    // A connection cut while a short write was buffered must not stay wedged in its handshake
    // (see driver_socket.ts), and the factory waits between connects itself (reconnect.ts), so
    // the driver's own backoff is off. Neither option is in the driver's types.
    const plain = driverSocketFactory();
    const pool = postgres(url, { ...settings, ...{ socket: plain, backoff: noDriverBackoff } });
    // The TLS settings as the driver parsed them (URL, PGSSL); the pool opened no connection yet.
    const { ssl, sslnegotiation } = pool.options as {
      ssl: DriverTls["ssl"];
      sslnegotiation?: string;
    };
    if (!ssl) {
      closeGateOnEnd(pool, plain.gate);
      return pool;
    }
    // Over TLS the factory upgrades the connection itself, so that its flush covers the TLS socket.
    const secure = driverSocketFactory({ ssl, sslnegotiation: sslnegotiation ?? null });
    const tlsPool = postgres(url, {
      ...settings,
      ssl: false,
      ...{ socket: secure, backoff: noDriverBackoff },
    });
    closeGateOnEnd(tlsPool, secure.gate);
    return tlsPool;
  } catch (error) {
    // postgres.js parses the URL here; its TypeError/URIError quote the password, so neither the
    // message nor the cause is passed on.
    if (!(error instanceof TypeError || error instanceof URIError)) throw error;
    throw new TypeError(
      `Cannot connect: the connection string ${JSON.stringify(redactPassword(url))} is not a ` +
        "valid URL; expected postgres://user:password@host:port/database, with special " +
        "characters of the user and password percent-encoded (@ as %40, # as %23, / as %2F)",
    );
  }
}

/**
 * The connection string with everything between the user's colon and the last `@` masked, with or
 * without a scheme.
 */
function redactPassword(url: string): string {
  const scheme = url.indexOf("://");
  const start = scheme === -1 ? 0 : scheme + 3;
  const at = url.lastIndexOf("@");
  if (at < start) return url;
  const colon = url.indexOf(":", start);
  return colon === -1 || colon > at ? url : `${url.slice(0, colon + 1)}***${url.slice(at)}`;
}
