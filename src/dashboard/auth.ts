/**
 * The dashboard's access check: a secret token, given once in the URL (`/<base>/?token=...`), then
 * kept in an HTTP-only, same-site cookie whose path is the dashboard's random base path; or sent as
 * `Authorization: Bearer <token>`. Browsers send a host's cookies to all of its ports, so the path,
 * not the port, keeps the cookie from another server on the same host.
 *
 * @module
 */

/** Shortest secret accepted for a dashboard reachable from other machines. */
export const MIN_SECRET_LENGTH = 16;

/** `count` random bytes as hex. */
function randomHex(count: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(count));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * A fresh base path for one start of the dashboard: `/` and 16 random bytes as hex, no trailing
 * slash. Every dashboard address lives under it and the cookie is scoped to it.
 *
 * @example Usage
 * ```ts
 * import { newBasePath } from "./auth.ts";
 *
 * const base = newBasePath(); // "/" and 32 hex digits
 * ```
 */
export function newBasePath(): string {
  return `/${randomHex(16)}`;
}

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
  return randomHex(32);
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

/** The cookie's name; its `Path`, the base path, tells one dashboard's cookie from another's. */
const COOKIE_NAME = "sluice_dashboard";

/**
 * Checks requests against one token. The cookie is scoped to the dashboard's base path, as
 * browsers share cookies between ports of one host.
 *
 * @example Usage
 * ```ts
 * import { TokenCheck } from "./auth.ts";
 *
 * const check = new TokenCheck("s3cret-s3cret-s3cret", "/0f3a");
 * check.check(new Request("http://127.0.0.1:4300/0f3a/")).kind; // "denied"
 * ```
 */
export class TokenCheck {
  readonly #token: Uint8Array;
  readonly #tokenText: string;
  readonly #basePath: string;

  /** A check for `token`, on a dashboard whose addresses live under `basePath` (`/<random>`). */
  constructor(token: string, basePath: string) {
    this.#tokenText = token;
    this.#token = new TextEncoder().encode(token);
    this.#basePath = basePath;
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
        cookie: `${COOKIE_NAME}=${
          encodeURIComponent(this.#tokenText)
        }; Path=${this.#basePath}/; HttpOnly; SameSite=Strict`,
      };
    }
    const bearer = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
    if (this.#matches(bearer) || this.#matches(this.#cookie(request))) return { kind: "allowed" };
    return { kind: "denied" };
  }

  #cookie(request: Request): string | undefined {
    for (const part of (request.headers.get("cookie") ?? "").split(";")) {
      const [name, ...value] = part.trim().split("=");
      if (name !== COOKIE_NAME) continue;
      try {
        return decodeURIComponent(value.join("="));
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}
