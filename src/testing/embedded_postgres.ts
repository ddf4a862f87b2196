/**
 * An embedded PostgreSQL for development and tests: PGlite (PostgreSQL compiled to WebAssembly)
 * inside this process, served over the wire protocol on a free loopback port by a small bridge,
 * so that postgres.js, the migrations and the workers run against it unchanged. Limits: one
 * session for every connection, one process (docs/embedded.md).
 *
 * Notifications: PGlite's one session receives every NOTIFY committed by any connection (the
 * NotificationResponse comes back in the reply of the exchange that committed it), so the bridge
 * takes them out of that reply and writes each to the connections that LISTEN on its channel.
 * The session LISTENs on the union of every connection's channels: it is told LISTEN as the
 * clients send it, and a client's UNLISTEN that the session obeys for everyone is answered with a
 * LISTEN again for the other connections still listening.
 *
 * @module
 */

// A full specifier, as in src/db/driver/postgres.ts: a user project loading the package resolves it
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
  const channels = new Channels();
  const serving = (async () => {
    const served: Promise<void>[] = [];
    for await (const conn of listener) {
      connections.add(conn);
      const client = new Client(conn);
      served.push(
        serveConnection({ db, session, channels }, client).finally(() => connections.delete(conn)),
      );
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

/** What every connection shares: the database, who holds its session, who listens where. */
interface Shared {
  db: PGlite;
  session: SessionLock;
  channels: Channels;
}

/** One client connection, whose writes (replies and notifications) go out one at a time. */
class Client {
  readonly conn: Deno.Conn;
  #writing: Promise<void> = Promise.resolve();

  /** LISTEN/UNLISTEN statements of the connection's prepared statements, by name. */
  #prepared = new Map<string, ListenStatement[]>();
  /** LISTEN/UNLISTEN statements sent since the last end of an exchange. */
  #sent: ListenStatement[] = [];

  constructor(conn: Deno.Conn) {
    this.conn = conn;
  }

  /** Notes the LISTEN and UNLISTEN statements `message` runs or prepares. */
  track(message: Uint8Array): void {
    const body = message.subarray(5);
    if (message[0] === QUERY) {
      this.#sent.push(...listenStatements(cString(body, 0)));
    } else if (message[0] === PARSE) {
      const name = cString(body, 0);
      const statements = listenStatements(cString(body, body.indexOf(0) + 1));
      if (statements.length > 0) this.#prepared.set(name, statements);
      else this.#prepared.delete(name);
    } else if (message[0] === BIND) {
      const statement = cString(body, body.indexOf(0) + 1);
      this.#sent.push(...this.#prepared.get(statement) ?? []);
    }
  }

  /** The statements sent since the last call. */
  executed(): ListenStatement[] {
    return this.#sent.splice(0);
  }

  /** Writes `data` after every earlier write; a closed connection swallows it. */
  write(data: Uint8Array<ArrayBuffer>): Promise<void> {
    this.#writing = this.#writing.then(() => writeAll(this.conn, data)).catch(() => {});
    return this.#writing;
  }
}

/** The channels each client LISTENs on. */
class Channels {
  #byClient = new Map<Client, Set<string>>();

  /** Applies `client`'s LISTEN and UNLISTEN statements, in order. */
  apply(client: Client, statements: ListenStatement[]): void {
    let own = this.#byClient.get(client);
    if (own === undefined) this.#byClient.set(client, own = new Set());
    for (const statement of statements) {
      if (statement.kind === "listen") own.add(statement.channel);
      else if (statement.channel === null) own.clear();
      else own.delete(statement.channel);
    }
  }

  /** Forgets `client`; returns the channels no client listens on any more. */
  remove(client: Client): string[] {
    const own = [...this.#byClient.get(client) ?? []];
    this.#byClient.delete(client);
    return own.filter((channel) => !this.listened(channel));
  }

  /** Whether any client listens on `channel`. */
  listened(channel: string): boolean {
    for (const own of this.#byClient.values()) if (own.has(channel)) return true;
    return false;
  }

  /** Every channel some client listens on. */
  all(): Set<string> {
    const all = new Set<string>();
    for (const own of this.#byClient.values()) for (const channel of own) all.add(channel);
    return all;
  }

  /** The clients listening on `channel`. */
  listeners(channel: string): Client[] {
    return [...this.#byClient].filter(([, own]) => own.has(channel)).map(([client]) => client);
  }
}

/** Relays one client connection's messages to the session, an exchange at a time. */
async function serveConnection(shared: Shared, client: Client): Promise<void> {
  const { db, session, channels } = shared;
  const conn = client.conn;
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
            await client.write(new TextEncoder().encode("N"));
            continue;
          }
          if (code === CANCEL_REQUEST) return;
          started = true;
          await exchange(shared, client, [message], true);
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
          await exchange(shared, client, pending.splice(0), message[0] !== FLUSH);
        }
      }
    }
  } finally {
    const forgotten = channels.remove(client);
    // A client gone mid-transaction must not keep the session; the session stops listening
    // where it was the last listener.
    if (session.holds(conn) && db.isInTransaction()) await db.exec("rollback").catch(() => {});
    if (forgotten.length > 0) {
      await session.acquire(conn);
      const unused = forgotten.filter((channel) => !channels.listened(channel));
      if (unused.length > 0) {
        // exec takes PGlite's query lock itself (runExclusive around it would deadlock).
        await db.exec(unused.map((channel) => `unlisten ${quoteIdentifier(channel)};`).join(""))
          .catch(() => {});
      }
    }
    session.release(conn);
    closeQuietly(conn);
  }
}

/**
 * Runs messages on the session and relays the replies; the session is released when they `end`
 * an exchange outside a transaction. Notifications in the replies go to their listeners.
 */
async function exchange(
  shared: Shared,
  client: Client,
  messages: Uint8Array[],
  end: boolean,
): Promise<void> {
  const { db, session, channels } = shared;
  const conn = client.conn;
  await session.acquire(conn);
  const raw: Uint8Array[] = [];
  for (const message of messages) client.track(message);
  const notifications: Uint8Array[] = [];
  try {
    for (const message of messages) {
      await db.runExclusive(() =>
        db.execProtocolRawStream(message, { onRawData: (data) => raw.push(data.slice()) })
      );
    }
    // An extended-protocol statement runs at its Execute, which a Sync ends.
    const statements = end ? client.executed() : [];
    if (statements.length > 0) {
      const before = channels.all();
      channels.apply(client, statements);
      // The session obeyed an UNLISTEN for every client: listen again where others still do.
      const unlistened = new Set(
        statements.flatMap((statement) =>
          statement.kind === "listen"
            ? []
            : statement.channel === null
            ? [...before]
            : [statement.channel]
        ),
      );
      const relisten = [...unlistened].filter((channel) => channels.listened(channel));
      if (relisten.length > 0) {
        await db.exec(relisten.map((channel) => `listen ${quoteIdentifier(channel)};`).join(""));
      }
    }
  } finally {
    if (end && !db.isInTransaction()) session.release(conn);
  }
  const replies: Uint8Array[] = [];
  for (const message of splitMessages(concat(raw))) {
    if (message[0] === NOTIFICATION_RESPONSE) notifications.push(message);
    else replies.push(message);
  }
  await client.write(concat(replies));
  for (const notification of notifications) {
    const channel = notificationChannel(notification);
    for (const listener of channels.listeners(channel)) void listener.write(notification.slice());
  }
}

const NOTIFICATION_RESPONSE = "A".charCodeAt(0);
const QUERY = "Q".charCodeAt(0);
const PARSE = "P".charCodeAt(0);
const BIND = "B".charCodeAt(0);

/** A LISTEN or UNLISTEN statement of a client; `channel` `null` is `UNLISTEN *`. */
type ListenStatement =
  | { kind: "listen"; channel: string }
  | { kind: "unlisten"; channel: string | null };

/** The LISTEN and UNLISTEN statements of SQL text, in order. */
function listenStatements(text: string): ListenStatement[] {
  if (!/listen/i.test(text)) return [];
  const found: ListenStatement[] = [];
  for (const statement of splitStatements(text)) {
    const match = statement.match(
      /^\s*(un)?listen\s+("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*|\*)\s*$/i,
    );
    if (match === null) continue;
    const target = match[2];
    const channel = target === "*"
      ? null
      : target.startsWith('"')
      ? target.slice(1, -1).replaceAll('""', '"')
      : target.toLowerCase();
    if (match[1] !== undefined) found.push({ kind: "unlisten", channel });
    else if (channel !== null) found.push({ kind: "listen", channel });
  }
  return found;
}

/** Splits SQL text at semicolons outside quotes and comments. */
function splitStatements(text: string): string[] {
  const statements: string[] = [];
  let current = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1);
      const stop = close === -1 ? text.length : close + 1;
      current += text.slice(i, stop);
      i = stop;
    } else if (c === "-" && text[i + 1] === "-") {
      const close = text.indexOf("\n", i);
      i = close === -1 ? text.length : close;
    } else if (c === ";") {
      statements.push(current);
      current = "";
      i++;
    } else {
      current += c;
      i++;
    }
  }
  statements.push(current);
  return statements;
}

function cString(bytes: Uint8Array, from: number): string {
  const end = bytes.indexOf(0, from);
  return new TextDecoder().decode(bytes.subarray(from, end === -1 ? bytes.length : end));
}

/** A NotificationResponse's channel: after the type, the length and the sender's pid. */
function notificationChannel(message: Uint8Array): string {
  return cString(message, 9);
}

/** Splits a reply stream into whole backend messages. */
function splitMessages(data: Uint8Array): Uint8Array[] {
  const messages: Uint8Array[] = [];
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let offset = 0;
  while (offset + 5 <= data.length) {
    const length = 1 + view.getInt32(offset + 1);
    messages.push(data.subarray(offset, offset + length));
    offset += length;
  }
  return messages;
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
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
