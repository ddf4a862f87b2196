/**
 * An embedded PostgreSQL for development and tests: PGlite (PostgreSQL compiled to WebAssembly)
 * inside this process, served over the wire protocol on a free loopback port by a small bridge,
 * so that postgres.js, the migrations and the workers run against it unchanged. Limits: one
 * session for every connection, no notifications, one process (docs/embedded.md).
 *
 * @module
 */

// A full specifier, as in src/db/postgres.ts: a user project loading the package resolves it
// without an import map entry of its own.
// deno-lint-ignore no-import-prefix
import { PGlite } from "npm:@electric-sql/pglite@0.5.17";

/** Options of {@linkcode startEmbeddedPostgres}. */
export interface StartEmbeddedPostgresOptions {
  /**
   * A directory that keeps the database between runs (created when missing). Without it the
   * database lives in memory and is gone on `stop()`.
   */
  dataDir?: string;
}

/** A running embedded database. Dispose it (or call `stop()`) to close it. */
export interface EmbeddedPostgres extends AsyncDisposable {
  /** Connection URL of user `postgres` to database `postgres` over TCP on 127.0.0.1. */
  url: string;
  /** The TCP port on 127.0.0.1. */
  port: number;
  /** The data directory, or `null` for an in-memory database. */
  dataDir: string | null;
  /** Closes the socket server and the database (flushing a data directory). Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts PGlite in this process and serves it on a free port of 127.0.0.1.
 *
 * @example Run a query against an embedded database
 * ```ts ignore
 * import postgres from "postgres";
 * import { startEmbeddedPostgres } from "./embedded_postgres.ts";
 * await using pg = await startEmbeddedPostgres();
 * const sql = postgres(pg.url);
 * console.log(await sql`select version()`);
 * await sql.end();
 * ```
 */
export async function startEmbeddedPostgres(
  options: StartEmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgres> {
  const dataDir = options.dataDir ?? null;
  if (dataDir !== null) await Deno.mkdir(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir ?? undefined);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const session = new SessionLock();
  const connections = new Set<Deno.Conn>();
  const serving = (async () => {
    const served: Promise<void>[] = [];
    for await (const conn of listener) {
      connections.add(conn);
      served.push(serveConnection(db, session, conn).finally(() => connections.delete(conn)));
    }
    await Promise.allSettled(served);
  })();
  const port = listener.addr.port;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    stopping ??= (async () => {
      listener.close();
      for (const conn of connections) closeQuietly(conn);
      await serving;
      await db.close();
    })();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Who holds the one PGlite session: a connection holds it for one exchange, and keeps it while
 * its transaction is open. Waiters are served in arrival order.
 */
class SessionLock {
  #owner: Deno.Conn | null = null;
  #waiters: { conn: Deno.Conn; resolve: () => void }[] = [];

  /** Resolves once `conn` holds the session (at once when it already does). */
  acquire(conn: Deno.Conn): Promise<void> {
    if (this.#owner === conn) return Promise.resolve();
    if (this.#owner === null) {
      this.#owner = conn;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push({ conn, resolve }));
  }

  /** Hands the session to the next waiter, if `conn` holds it. */
  release(conn: Deno.Conn): void {
    if (this.#owner !== conn) return;
    const next = this.#waiters.shift();
    this.#owner = next?.conn ?? null;
    next?.resolve();
  }

  /** Whether `conn` holds the session. */
  holds(conn: Deno.Conn): boolean {
    return this.#owner === conn;
  }
}

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
/** Message types that end an exchange: Sync, simple Query. */
const EXCHANGE_END = new Set(["S".charCodeAt(0), "Q".charCodeAt(0)]);
/** Flush: the client waits for replies, but the exchange goes on (the session stays held). */
const FLUSH = "H".charCodeAt(0);
const TERMINATE = "X".charCodeAt(0);

/** Relays one client connection's messages to the session, an exchange at a time. */
async function serveConnection(db: PGlite, session: SessionLock, conn: Deno.Conn): Promise<void> {
  let buffer: Uint8Array = new Uint8Array(0);
  let started = false;
  const pending: Uint8Array[] = [];
  const chunk = new Uint8Array(64 * 1024);
  try {
    while (true) {
      const read = await conn.read(chunk).catch(() => null);
      if (read === null) break;
      buffer = concat([buffer, chunk.subarray(0, read)]);
      while (true) {
        if (!started) {
          if (buffer.length < 8) break;
          const view = new DataView(buffer.buffer, buffer.byteOffset);
          const length = view.getInt32(0);
          if (buffer.length < length) break;
          const code = view.getInt32(4);
          const message = buffer.slice(0, length);
          buffer = buffer.slice(length);
          if (code === SSL_REQUEST || code === GSS_REQUEST) {
            await writeAll(conn, new TextEncoder().encode("N"));
            continue;
          }
          if (code === CANCEL_REQUEST) return;
          started = true;
          await exchange(db, session, conn, [message], true);
          continue;
        }
        if (buffer.length < 5) break;
        const length = 1 + new DataView(buffer.buffer, buffer.byteOffset).getInt32(1);
        if (buffer.length < length) break;
        const message = buffer.slice(0, length);
        buffer = buffer.slice(length);
        if (message[0] === TERMINATE) return;
        pending.push(message);
        if (EXCHANGE_END.has(message[0]) || message[0] === FLUSH) {
          await exchange(db, session, conn, pending.splice(0), message[0] !== FLUSH);
        }
      }
    }
  } finally {
    // A client gone mid-transaction must not keep the session.
    if (session.holds(conn) && db.isInTransaction()) await db.exec("rollback").catch(() => {});
    session.release(conn);
    closeQuietly(conn);
  }
}

/**
 * Runs messages on the session and relays the replies; the session is released when they `end`
 * an exchange outside a transaction.
 */
async function exchange(
  db: PGlite,
  session: SessionLock,
  conn: Deno.Conn,
  messages: Uint8Array[],
  end: boolean,
): Promise<void> {
  await session.acquire(conn);
  const replies: Uint8Array[] = [];
  try {
    for (const message of messages) {
      await db.runExclusive(() =>
        db.execProtocolRawStream(message, { onRawData: (data) => replies.push(data.slice()) })
      );
    }
  } finally {
    if (end && !db.isInTransaction()) session.release(conn);
  }
  await writeAll(conn, concat(replies));
}

async function writeAll(conn: Deno.Conn, data: Uint8Array<ArrayBuffer>): Promise<void> {
  let written = 0;
  while (written < data.length) written += await conn.write(data.subarray(written));
}

function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}
