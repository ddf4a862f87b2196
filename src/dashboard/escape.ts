/**
 * Escaping for the dashboard's HTML: every value that comes from the database (slugs, function
 * names, inputs, outputs, error texts) reaches a page only through {@linkcode markup}, so a
 * `<script>` in an error message shows as text.
 *
 * @module
 */

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/**
 * A text escaped for HTML text and for a quoted attribute value.
 *
 * @example Usage
 * ```ts
 * import { escapeHtml } from "./escape.ts";
 *
 * escapeHtml("<script>x</script>"); // "&lt;script&gt;x&lt;/script&gt;"
 * ```
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char]);
}

/** A piece of HTML that is already safe: markup written here or escaped values. */
export class Html {
  /** The markup. */
  readonly markup: string;
  /** Wraps markup that is known to be safe. */
  constructor(markup: string) {
    this.markup = markup;
  }
  /** The markup. */
  toString(): string {
    return this.markup;
  }
}

/** What a template may interpolate: safe HTML, text to escape, a number, or nothing. */
export type HtmlValue = Html | string | number | null | undefined | false | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

/**
 * A template tag for HTML: interpolated strings are escaped, {@linkcode Html} values (other
 * templates) are kept, arrays are joined, `null`, `undefined` and `false` are left out. (Not
 * named `html`: `deno fmt` would reformat such templates, adding whitespace to text.)
 *
 * @example Usage
 * ```ts
 * import { markup } from "./escape.ts";
 *
 * const error = "<img src=x onerror=alert(1)>";
 * String(markup`<td>${error}</td>`); // "<td>&lt;img src=x onerror=alert(1)&gt;</td>"
 * ```
 */
export function markup(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let text = strings[0];
  for (let i = 0; i < values.length; i++) text += render(values[i]) + strings[i + 1];
  return new Html(text);
}
