/**
 * The dashboard's access check: a secret token, given once in the URL (`/?token=...`), then kept
 * in an HTTP-only, same-site cookie; or sent as `Authorization: Bearer <token>`.
 *
 * @module
 */

/** Shortest secret accepted for a dashboard reachable from other machines. */
export const MIN_SECRET_LENGTH = 16;

/**
 * A fresh random token: 32 random bytes as hex.
 *
 * @example Usage
 * ```ts
 * import { newToken } from "./auth.ts";
 *
 * const token = newToken(); // 64 hex digits
 * ```
 */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Whether two byte strings are equal, in a time that depends on their lengths only. */
function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) difference |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return difference === 0;
}

/** What {@linkcode TokenCheck.check} decided about a request. */
export type Access =
  | { readonly kind: "allowed" }
  | { readonly kind: "denied" }
  /** The token came in the URL: set the cookie and redirect to the URL without it. */
  | { readonly kind: "welcome"; readonly location: string; readonly cookie: string };

/**
 * Checks requests against one token. The cookie's name carries the port, as browsers share
 * cookies between ports of one host.
 *
 * @example Usage
 * ```ts
 * import { TokenCheck } from "./auth.ts";
 *
 * const check = new TokenCheck("s3cret-s3cret-s3cret", 4300);
 * check.check(new Request("http://127.0.0.1:4300/")).kind; // "denied"
 * ```
 */
export class TokenCheck {
  readonly #token: Uint8Array;
  readonly #cookieName: string;
  readonly #tokenText: string;

  /** A check for `token`, on a server listening on `port`. */
  constructor(token: string, port: number) {
    this.#tokenText = token;
    this.#token = new TextEncoder().encode(token);
    this.#cookieName = `sluice_dashboard_${port}`;
  }

  #matches(candidate: string | null | undefined): boolean {
    if (candidate === null || candidate === undefined) return false;
    return timingSafeEqual(new TextEncoder().encode(candidate), this.#token);
  }

  /** Whether the request carries the token (query, bearer header or cookie). */
  check(request: Request): Access {
    const url = new URL(request.url);
    const fromQuery = url.searchParams.get("token");
    if (fromQuery !== null && this.#matches(fromQuery)) {
      url.searchParams.delete("token");
      return {
        kind: "welcome",
        location: `${url.pathname}${url.search}`,
        cookie: `${this.#cookieName}=${
          encodeURIComponent(this.#tokenText)
        }; Path=/; HttpOnly; SameSite=Strict`,
      };
    }
    const bearer = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
    if (this.#matches(bearer) || this.#matches(this.#cookie(request))) return { kind: "allowed" };
    return { kind: "denied" };
  }

  #cookie(request: Request): string | undefined {
    for (const part of (request.headers.get("cookie") ?? "").split(";")) {
      const [name, ...value] = part.trim().split("=");
      if (name !== this.#cookieName) continue;
      try {
        return decodeURIComponent(value.join("="));
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}
