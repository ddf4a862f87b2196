/**
 * A loopback registry shaped like JSR, serving one package from a checkout: what Deno fetches when
 * `JSR_URL` points at it. JSR's registry API, as Deno reads it:
 *
 * - `GET <JSR_URL>@<scope>/<name>/meta.json`: `{ scope, name, latest, versions: { <v>: {} } }`;
 * - `GET <JSR_URL>@<scope>/<name>/<v>_meta.json`: `{ manifest, exports }`, the manifest mapping
 *   each file (`/path`) to `{ size, checksum: "sha256-<hex>" }` (Deno checks every file it
 *   fetches against it), the exports as in the package's deno.json;
 * - `GET <JSR_URL>@<scope>/<name>/<v>/<path>`: the file as published.
 *
 * Published files are not the checkout's: `deno publish` rewrites each bare specifier of the
 * package's own modules through its deno.json `imports` (`"postgres"` becomes
 * `"npm:postgres@3.4.9"`), since a package's import map does not travel with it. This server does
 * the same for every module reachable from the exports, and refuses to start on a bare specifier
 * the map does not resolve (publishing would fail on it too). Anything else answers 404.
 *
 * @module
 */

/** A running registry; dispose it to stop it. */
export interface JsrServer extends AsyncDisposable {
  /** The value for `JSR_URL`, ending in `/`. */
  readonly url: string;
  /** The package name, e.g. `@sluice/sluice`. */
  readonly name: string;
  /** The one version served. */
  readonly version: string;
  /** Every served path (`/<name>/meta.json` included), relative to `url`, for the test's asserts. */
  readonly requests: readonly string[];
}

/** A bare specifier in a published module that the package's deno.json does not resolve. */
export class UnmappedSpecifierError extends Error {
  override readonly name = "UnmappedSpecifierError";
  /** The module, relative to the package root. */
  readonly file: string;
  /** The bare specifier. */
  readonly specifier: string;
  constructor(file: string, specifier: string, detail: string) {
    super(`Cannot publish ${file}: bare specifier ${JSON.stringify(specifier)}: ${detail}`);
    this.file = file;
    this.specifier = specifier;
  }
}

const MODULE = /\.(ts|tsx|mts|js|jsx|mjs)$/;

interface Span {
  readonly start: { readonly line: number; readonly character: number };
  readonly end: { readonly line: number; readonly character: number };
}

interface Resolution {
  readonly specifier?: string;
  readonly error?: string;
  readonly span: Span;
}

/**
 * Where each module of the package's graph imports a bare specifier, and what deno.json resolves
 * it to: `deno info --json` from every export, whose spans locate each import's string literal
 * in the source (imports in comments and strings are not imports, and are left alone).
 */
async function bareImports(
  root: URL,
  entries: readonly string[],
): Promise<Map<string, { span: Span; target: string }[]>> {
  const documents = [];
  for (const entry of entries) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(
        `Cannot list the imports of ${entry}: ${new TextDecoder().decode(output.stderr)}`,
      );
    }
    documents.push(
      JSON.parse(new TextDecoder().decode(output.stdout)) as {
        modules: {
          specifier: string;
          dependencies?: { specifier: string; code?: Resolution; type?: Resolution }[];
        }[];
      },
    );
  }
  const found = new Map<string, { span: Span; target: string }[]>();
  for (const module of documents.flatMap((document) => document.modules)) {
    if (!module.specifier.startsWith(root.href)) continue;
    const file = module.specifier.slice(root.href.length);
    if (found.has(file)) continue;
    const edits = [];
    for (const dependency of module.dependencies ?? []) {
      if (/^(\.{0,2}\/|[a-z][a-z0-9+.-]*:)/i.test(dependency.specifier)) continue;
      for (const resolution of [dependency.code, dependency.type]) {
        if (resolution === undefined) continue;
        if (resolution.specifier === undefined || resolution.error !== undefined) {
          throw new UnmappedSpecifierError(
            file,
            dependency.specifier,
            resolution.error ?? "not resolved",
          );
        }
        edits.push({ span: resolution.span, target: resolution.specifier });
      }
    }
    found.set(file, edits);
  }
  return found;
}

/** Replaces each span (a string literal, quotes included) with the quoted target. */
function unfurl(text: string, edits: readonly { span: Span; target: string }[]): string {
  const lines = text.split("\n");
  const ordered = [...edits].sort((a, b) =>
    b.span.start.line - a.span.start.line || b.span.start.character - a.span.start.character
  );
  for (const { span, target } of ordered) {
    const line = lines[span.start.line];
    lines[span.start.line] = line.slice(0, span.start.character) + JSON.stringify(target) +
      line.slice(span.end.character);
  }
  return lines.join("\n");
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function contentType(path: string): string {
  if (MODULE.test(path)) return "application/typescript; charset=utf-8";
  if (path.endsWith(".json")) return "application/json; charset=utf-8";
  return "text/plain; charset=utf-8";
}

/**
 * Serves the package at `root` (its deno.json gives name, version, exports and imports) on a free
 * loopback port, publishing `files` (paths relative to `root`, e.g. from `deno publish --dry-run`).
 *
 * @example Usage
 * ```ts ignore
 * import { serveJsr } from "./dev/jsr_server.ts";
 *
 * await using jsr = await serveJsr(new URL("./", import.meta.url), ["mod.ts", "deno.json"]);
 * // JSR_URL=${jsr.url} deno run -A jsr:@sluice/sluice@0.1.0/cli install
 * ```
 */
export async function serveJsr(root: URL, files: readonly string[]): Promise<JsrServer> {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
    name: string;
    version: string;
    exports: string | Record<string, string>;
  };
  const [scope, name] = config.name.slice(1).split("/");
  const exports = typeof config.exports === "string" ? { ".": config.exports } : config.exports;
  const imports = await bareImports(root, Object.values(exports));
  const published = new Map<string, Uint8Array<ArrayBuffer>>();
  for (const file of files) {
    const bytes = await Deno.readFile(new URL(file, root));
    const edits = MODULE.test(file) ? imports.get(file) ?? [] : [];
    published.set(
      `/${file}`,
      edits.length === 0
        ? bytes
        : new TextEncoder().encode(unfurl(new TextDecoder().decode(bytes), edits)),
    );
  }
  const manifest: Record<string, { size: number; checksum: string }> = {};
  for (const [path, bytes] of published) {
    manifest[path] = { size: bytes.length, checksum: `sha256-${await sha256(bytes)}` };
  }
  // A prefix named for the content: Deno caches remote files by URL in a DENO_DIR every run
  // shares, and a loopback port comes back, so another checkout's registry on a reused port would
  // otherwise meet this one's cached files and fail Deno's integrity check.
  const tag = (await sha256(new TextEncoder().encode(JSON.stringify(manifest)))).slice(0, 16);
  const served = `/${tag}/`;
  const base = `${served}@${scope}/${name}/`;
  const documents = new Map<string, string>([
    [
      `${base}meta.json`,
      JSON.stringify({ scope, name, latest: config.version, versions: { [config.version]: {} } }),
    ],
    [`${base}${config.version}_meta.json`, JSON.stringify({ manifest, exports })],
  ]);
  const requests: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    requests.push(path.startsWith(served) ? path.slice(served.length) : path.slice(1));
    const document = documents.get(path);
    if (document !== undefined) {
      return new Response(document, { headers: { "content-type": contentType(path) } });
    }
    const prefix = `${base}${config.version}/`;
    const bytes = path.startsWith(prefix)
      ? published.get(path.slice(prefix.length - 1))
      : undefined;
    if (bytes === undefined) return new Response("not found", { status: 404 });
    return new Response(bytes, { headers: { "content-type": contentType(path) } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}${served}`,
    name: config.name,
    version: config.version,
    requests,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
