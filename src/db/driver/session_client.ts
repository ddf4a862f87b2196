/**
 * `openSessionClient()`: one session connection with the settings of an existing pool, for LISTEN
 * (the workers' queue listener and the run listener of `watchRun()`). Kept apart from the pool
 * because LISTEN needs a session that is never recycled, which a pool (or a transaction pooler)
 * does not promise.
 *
 * @module
 */

import { type DriverSocketFactory, driverSocketFactory } from "./driver_socket.ts";
import postgres, { type Sql } from "./postgres.ts";
import {
  boundDriverBackoff,
  closeGateOnEnd,
  noDriverBackoff,
  ownDriverShared,
} from "./reconnect.ts";

/** The postgres.js options a session client may set beyond the pool's. */
export interface SessionClientOptions {
  /** A notification arrived. */
  readonly onnotify?: (channel: string, payload: string) => void;
  /** The session closed. */
  readonly onclose?: () => void;
}

/**
 * A client of one session connection with `pool`'s connection settings (postgres.js parsed
 * options, which it accepts back as is; `sql.listen()` does the same), never recycled, with its
 * own reconnect state: its failed connects never lengthen the pool's reconnect waits, and it waits
 * between its own connects as the pool does (reconnect.ts), so that a listener never floods a
 * recovering server with connects. Close it with `end()`.
 *
 * @param pool The pool whose settings the session copies.
 * @param options Where notifications and closes go.
 * @returns The client.
 */
export function openSessionClient(pool: Sql, options: SessionClientOptions = {}): Sql {
  const poolOptions = pool.options as unknown as Record<string, unknown>;
  const poolSocket = poolOptions.socket;
  const sibling = isDriverSocketFactory(poolSocket) ? driverSocketFactory(poolSocket.tls) : null;
  const settings = {
    ...poolOptions,
    shared: ownDriverShared(pool),
    // The factory waits between connects itself (connect.ts turns the driver's backoff off).
    ...(sibling === null ? {} : { socket: sibling, backoff: noDriverBackoff }),
    max: 1,
    idle_timeout: null,
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => {},
    ...options,
  };
  const client = postgres(settings as unknown as postgres.Options<Record<string, never>>);
  if (sibling === null) boundDriverBackoff(client);
  else closeGateOnEnd(client, sibling.gate);
  return client;
}

function isDriverSocketFactory(value: unknown): value is DriverSocketFactory {
  return typeof value === "function" && "gate" in value && "tls" in value;
}
