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

/**
 * The longest `Authorization` header looked at: far above any real secret (a Supabase service
 * role JWT is a few hundred characters), so a longer header is refused without being parsed.
 */
const MAX_AUTHORIZATION_LENGTH = 4096;

/**
 * The token of a `Bearer` header (scheme case-insensitive), or `null`. One pass over at most
 * {@linkcode MAX_AUTHORIZATION_LENGTH} characters: no regular expression, so no input can make
 * it backtrack.
 */
function bearerToken(header: string | null): string | null {
  if (header === null || header.length > MAX_AUTHORIZATION_LENGTH) return null;
  const scheme = "bearer";
  if (header.slice(0, scheme.length).toLowerCase() !== scheme) return null;
  let start = scheme.length;
  if (!isBlank(header, start)) return null;
  while (isBlank(header, start)) start++;
  let end = header.length;
  while (end > start && isBlank(header, end - 1)) end--;
  return start === end ? null : header.slice(start, end);
}

/** Whether the character at `index` is a space or a tab (false past the end). */
function isBlank(text: string, index: number): boolean {
  const char = text[index];
  return char === " " || char === "\t";
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}
