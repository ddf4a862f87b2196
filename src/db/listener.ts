/**
 * `openListenerConnection()`: one session connection for LISTEN, with the settings of an existing
 * pool. Kept apart from the pool because LISTEN needs a session that is never recycled, which a
 * pool (or a transaction pooler) does not promise.
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";
import { openSessionClient } from "./driver/session_client.ts";

/** What the listener connection reports. */
export interface ListenerEvents {
  /** A notification arrived on a channel this connection listens to. */
  readonly onNotify: (channel: string, payload: string) => void;
  /** The connection closed (it reopens on the next {@linkcode ListenerConnection.listen}). */
  readonly onClose: () => void;
}

/** A session connection that LISTENs. */
export interface ListenerConnection {
  /**
   * LISTENs on `channel` (a no-op when already listening) and resolves the backend pid of the
   * session, so that a caller can notice a replaced connection. Reconnects when the connection
   * was lost.
   */
  listen(channel: string): Promise<number>;
  /** Closes the connection at once. */
  close(): Promise<void>;
}

/**
 * Opens (lazily, on the first `listen`) a session connection with `pool`'s connection settings.
 *
 * @param pool The pool whose settings the connection copies.
 * @param events Where notifications and closes go.
 * @returns The connection.
 */
export function openListenerConnection(pool: Sql, events: ListenerEvents): ListenerConnection {
  const client = openSessionClient(pool, { onnotify: events.onNotify, onclose: events.onClose });
  return {
    async listen(channel) {
      const results = await client.unsafe(
        `listen ${channel}; select pg_backend_pid() as pid`,
      );
      const rows = (Array.isArray(results[0]) ? results.at(-1) : results) as { pid: number }[];
      return rows[0].pid;
    },
    async close() {
      await client.end({ timeout: 0 }).catch(() => {});
    },
  };
}
