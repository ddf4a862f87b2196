// The dashboard's responses: every HTML page carries the same security headers (the content
// security policy allows only the run page's own script), and a problem is a small page saying
// what went wrong.

import { resultPage } from "./action_page.ts";
import { LIVE_SCRIPT_SOURCE } from "./run_page.ts";

/** An HTML page with the dashboard's security headers. */
export function htmlResponse(
  body: string,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      // The inline style is ours; the one script that may run is the run page's, by its hash.
      "content-security-policy": `default-src 'self'; style-src 'unsafe-inline'; ` +
        `script-src ${LIVE_SCRIPT_SOURCE}; img-src 'self' data:; frame-ancestors 'none'; ` +
        `base-uri 'self'`,
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
      ...headers,
    },
  });
}

/** A page titled `title` saying `message`, with `status`. */
export function problem(status: number, title: string, message: string): Response {
  return htmlResponse(resultPage(title, message), status);
}
