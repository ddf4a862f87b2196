/**
 * Request authorization of a worker function: `Authorization: Bearer <secret>`, compared in
 * constant time.
 *
 * @module
 */

/**
 * Checks bearer tokens against one secret. Both sides are hashed with SHA-256 first, so the
 * comparison always runs over 32 bytes whatever the token's length, and the loop touches every
 * byte: neither the length nor the first differing byte of the secret leaks through timing.
 */
export class BearerAuth {
  #expected: Promise<Uint8Array>;

  constructor(secret: string) {
    this.#expected = sha256(secret);
  }

  /** Whether the `Authorization` header value carries the secret. */
  async verify(header: string | null): Promise<boolean> {
    const token = bearerToken(header);
    const [expected, actual] = await Promise.all([this.#expected, sha256(token ?? "")]);
    let difference = token === null ? 1 : 0;
    for (let i = 0; i < expected.length; i++) difference |= expected[i] ^ actual[i];
    return difference === 0;
  }
}

/** The token of a `Bearer` header (scheme case-insensitive), or `null`. */
function bearerToken(header: string | null): string | null {
  if (header === null) return null;
  const match = /^bearer[ \t]+(.*?)[ \t]*$/i.exec(header);
  return match === null || match[1] === "" ? null : match[1];
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}
