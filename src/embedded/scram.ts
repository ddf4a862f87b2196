/**
 * The server side of SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL speaks it, without channel
 * binding: the embedded database's bridge authenticates its clients with it. Not part of the public
 * API.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from "node:crypto";

/** PostgreSQL's default iteration count. */
const ITERATIONS = 4096;

/** One password's keys, derived once; each client's exchange is a {@linkcode ScramExchange}. */
export class ScramVerifier {
  readonly #salt = randomBytes(16);
  readonly #storedKey: Buffer;
  readonly #serverKey: Buffer;

  /** @param password The password clients must prove they know. */
  constructor(password: string) {
    const salted = pbkdf2Sync(password.normalize("NFKC"), this.#salt, ITERATIONS, 32, "sha256");
    this.#storedKey = createHash("sha256").update(hmac(salted, "Client Key")).digest();
    this.#serverKey = hmac(salted, "Server Key");
  }

  /** Starts one client's exchange. */
  exchange(): ScramExchange {
    return new ScramExchange(this.#salt, this.#storedKey, this.#serverKey);
  }
}

/** Thrown when a client's SCRAM message is malformed; `message` says how. */
export class ScramProtocolError extends Error {
  /** @param message What is wrong with the client's message. */
  constructor(message: string) {
    super(message);
    this.name = "ScramProtocolError";
  }
}

/** One client's SCRAM exchange: its first message, then its final one. */
export class ScramExchange {
  readonly #salt: Buffer;
  readonly #storedKey: Buffer;
  readonly #serverKey: Buffer;
  #clientFirstBare = "";
  #serverFirst = "";
  #gs2Header = "";

  /**
   * @param salt The password's salt.
   * @param storedKey H(ClientKey).
   * @param serverKey HMAC(SaltedPassword, "Server Key").
   */
  constructor(salt: Buffer, storedKey: Buffer, serverKey: Buffer) {
    this.#salt = salt;
    this.#storedKey = storedKey;
    this.#serverKey = serverKey;
  }

  /**
   * Answers the client-first-message (`n,,n=,r=<nonce>`) with the server-first-message.
   *
   * @throws {ScramProtocolError} when the message is malformed or asks for channel binding.
   */
  first(clientFirst: string): string {
    const match = clientFirst.match(
      /^([ny]),(?:a=[^,]*)?,(n=[^,]*,r=([\x21-\x2b\x2d-\x7e]+)(?:,.*)?)$/,
    );
    if (match === null) {
      throw new ScramProtocolError(
        clientFirst.startsWith("p=")
          ? "channel binding is not supported (there is no TLS)"
          : "malformed SCRAM client-first-message",
      );
    }
    this.#gs2Header = clientFirst.slice(0, clientFirst.length - match[2].length);
    this.#clientFirstBare = match[2];
    const nonce = match[3] + randomBytes(18).toString("base64");
    this.#serverFirst = `r=${nonce},s=${this.#salt.toString("base64")},i=${ITERATIONS}`;
    return this.#serverFirst;
  }

  /**
   * Checks the client-final-message's proof.
   *
   * @returns The server-final-message (`v=<signature>`), or `null` for a wrong password.
   * @throws {ScramProtocolError} when the message is malformed.
   */
  final(clientFinal: string): string | null {
    const match = clientFinal.match(/^(c=([^,]*),r=([^,]*)(?:,[^p][^,]*)*),p=([A-Za-z0-9+/=]+)$/);
    if (match === null) throw new ScramProtocolError("malformed SCRAM client-final-message");
    const [, withoutProof, binding, nonce, proofText] = match;
    const expectedNonce = this.#serverFirst.slice(2, this.#serverFirst.indexOf(","));
    if (nonce !== expectedNonce) throw new ScramProtocolError("SCRAM nonce does not match");
    if (binding !== Buffer.from(this.#gs2Header).toString("base64")) {
      throw new ScramProtocolError("SCRAM channel binding does not match");
    }
    const authMessage = `${this.#clientFirstBare},${this.#serverFirst},${withoutProof}`;
    const signature = hmac(this.#storedKey, authMessage);
    const proof = Buffer.from(proofText, "base64");
    if (proof.length !== signature.length) return null;
    const clientKey = Buffer.alloc(proof.length);
    for (let i = 0; i < proof.length; i++) clientKey[i] = proof[i] ^ signature[i];
    const storedKey = createHash("sha256").update(clientKey).digest();
    if (!timingSafeEqual(storedKey, this.#storedKey)) return null;
    return `v=${hmac(this.#serverKey, authMessage).toString("base64")}`;
  }
}

function hmac(key: Buffer, text: string): Buffer {
  return createHmac("sha256", key).update(text).digest();
}
