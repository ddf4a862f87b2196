// A PostgreSQL wire-protocol client that sends exactly the messages a test names, so that a test
// can stop a client between any two of them (postgres.js always sends a Sync after an error).
// Authenticates with SCRAM-SHA-256, a cleartext password, or none, as the server asks.
import { Buffer } from "node:buffer";
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";

/** One backend message: its type letter and its body. */
export interface BackendMessage {
  type: string;
  body: Uint8Array;
}

const encoder = new TextEncoder();

function message(type: string, ...parts: (Uint8Array | string | number)[]): Uint8Array {
  const bytes = parts.map((part) =>
    typeof part === "number"
      ? new Uint8Array([part >> 24, part >> 16, part >> 8, part].map((b) => b & 0xff))
      : typeof part === "string"
      ? encoder.encode(`${part}\0`)
      : part
  );
  const length = 4 + bytes.reduce((sum, part) => sum + part.length, 0);
  const out = new Uint8Array((type === "" ? 0 : 1) + length);
  let offset = 0;
  if (type !== "") out[offset++] = type.charCodeAt(0);
  new DataView(out.buffer).setInt32(offset, length);
  offset += 4;
  for (const part of bytes) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Parse of an unnamed statement. */
export const parse = (sql: string) => message("P", "", sql, new Uint8Array([0, 0]));
/** Describe of the unnamed statement. */
export const describe = () => message("D", new Uint8Array([0x53, 0]));
/** Bind of the unnamed statement to the unnamed portal, no parameters. */
export const bind = () => message("B", "", "", new Uint8Array([0, 0, 0, 0, 0, 0]));
/** Execute of the unnamed portal. */
export const execute = () => message("E", "", 0);
/** Flush. */
export const flush = () => message("H");
/** Sync. */
export const sync = () => message("S");
/** A simple Query. */
export const query = (sql: string) => message("Q", sql);

/** A connection speaking the wire protocol message by message. */
export class RawClient {
  readonly #conn: Deno.Conn;
  #buffer = new Uint8Array(0);
  /** The BackendKeyData's process id and secret key, for a CancelRequest. */
  backendKey: { pid: number; secret: number } | undefined;

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Connects to `url` and authenticates, up to the first ReadyForQuery. */
  static async connect(url: string): Promise<RawClient> {
    const target = new URL(url);
    const user = decodeURIComponent(target.username);
    const password = decodeURIComponent(target.password);
    const conn = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
    const client = new RawClient(conn);
    await client.send(
      message("", 196608, "user", user, "database", target.pathname.slice(1), new Uint8Array([0])),
    );
    let scram: { clientFirstBare: string; nonce: string } | undefined;
    while (true) {
      const reply = await client.read();
      if (reply.type === "E") throw new Error(`connection refused: ${errorText(reply.body)}`);
      if (reply.type === "Z") return client;
      if (reply.type === "K") {
        const key = new DataView(reply.body.buffer, reply.body.byteOffset);
        client.backendKey = { pid: key.getInt32(0), secret: key.getInt32(4) };
      }
      if (reply.type !== "R") continue;
      const view = new DataView(reply.body.buffer, reply.body.byteOffset);
      const code = view.getInt32(0);
      if (code === 3) await client.send(message("p", password));
      if (code === 10) {
        const nonce = randomBytes(18).toString("base64");
        const clientFirstBare = `n=,r=${nonce}`;
        const first = encoder.encode(`n,,${clientFirstBare}`);
        await client.send(message("p", "SCRAM-SHA-256", first.length, first));
        scram = { clientFirstBare, nonce };
      }
      if (code === 11) {
        const serverFirst = new TextDecoder().decode(reply.body.subarray(4));
        const fields = Object.fromEntries(
          serverFirst.split(",").map((field) => [field[0], field.slice(2)]),
        );
        const salted = pbkdf2Sync(
          password,
          Buffer.from(fields.s, "base64"),
          Number(fields.i),
          32,
          "sha256",
        );
        const clientKey = createHmac("sha256", salted).update("Client Key").digest();
        const storedKey = createHash("sha256").update(clientKey).digest();
        const withoutProof = `c=biws,r=${fields.r}`;
        const authMessage = `${scram!.clientFirstBare},${serverFirst},${withoutProof}`;
        const signature = createHmac("sha256", storedKey).update(authMessage).digest();
        const proof = clientKey.map((byte, i) => byte ^ signature[i]);
        await client.send(
          message(
            "p",
            encoder.encode(`${withoutProof},p=${Buffer.from(proof).toString("base64")}`),
          ),
        );
      }
    }
  }

  /** Writes messages. */
  async send(...messages: Uint8Array[]): Promise<void> {
    for (const data of messages) {
      let written = 0;
      while (written < data.length) written += await this.#conn.write(data.subarray(written));
    }
  }

  /** Reads the next backend message. */
  async read(): Promise<BackendMessage> {
    while (true) {
      if (this.#buffer.length >= 5) {
        const length = 1 + new DataView(this.#buffer.buffer, this.#buffer.byteOffset).getInt32(1);
        if (this.#buffer.length >= length) {
          const type = String.fromCharCode(this.#buffer[0]);
          const body = this.#buffer.slice(5, length);
          this.#buffer = this.#buffer.slice(length);
          return { type, body };
        }
      }
      const chunk = new Uint8Array(65536);
      const read = await this.#conn.read(chunk);
      if (read === null) throw new Error("the server closed the connection");
      const next = new Uint8Array(this.#buffer.length + read);
      next.set(this.#buffer);
      next.set(chunk.subarray(0, read), this.#buffer.length);
      this.#buffer = next;
    }
  }

  /** Reads messages up to and including the first of type `type`. */
  async readUntil(type: string): Promise<BackendMessage[]> {
    const messages: BackendMessage[] = [];
    while (messages.at(-1)?.type !== type) messages.push(await this.read());
    return messages;
  }

  /** Sends a CancelRequest for `key` on a connection of its own, as libpq does. */
  static async cancel(url: string, key: { pid: number; secret: number }): Promise<void> {
    const target = new URL(url);
    const conn = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
    try {
      const request = message("", 80877102, key.pid, key.secret);
      let written = 0;
      while (written < request.length) written += await conn.write(request.subarray(written));
      // The server closes the connection once it has handled the request.
      await conn.read(new Uint8Array(1)).catch(() => null);
    } finally {
      conn.close();
    }
  }

  /** Closes the connection. */
  close(): void {
    this.#conn.close();
  }
}

/** An ErrorResponse's code and message. */
export function errorText(body: Uint8Array): string {
  const fields = new TextDecoder().decode(body).split("\0");
  const code = fields.find((field) => field.startsWith("C"))?.slice(1);
  const text = fields.find((field) => field.startsWith("M"))?.slice(1);
  return `${code}: ${text}`;
}
