// sluice as users get it: the files `deno publish` would upload (deno.json's publish exclude list
// applied, as `deno publish --dry-run` lists them), served by the JSR-shaped loopback registry of
// dev/jsr_server.ts. A user project selects it with Deno's `JSR_URL` and loads sluice through
// `jsr:` specifiers only, so a file the package does not publish answers 404 and fails the project
// where the published package would.
import assert from "node:assert/strict";
import { type JsrServer, serveJsr } from "../../dev/jsr_server.ts";

const ROOT = new URL("../../", import.meta.url);

/** The files `deno publish` would upload, as paths relative to the repository root. */
export async function publishedFiles(): Promise<string[]> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["publish", "--dry-run", "--allow-dirty"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  if (code !== 0) throw new Error(`deno publish --dry-run failed:\n${text}`);
  const files = [...text.matchAll(/^\s+(file:\/\/\S+) \([\d.]+\w*B\)$/gm)]
    .map((match) => match[1].slice(ROOT.href.length));
  if (files.length === 0) throw new Error(`deno publish --dry-run listed no files:\n${text}`);
  return files.sort();
}

/** The registry serving this checkout's published files; set `JSR_URL` to its `url`. */
export async function serveRegistry(): Promise<JsrServer> {
  return await serveJsr(ROOT, await publishedFiles());
}

/**
 * docs/getting_started.md's install command, exactly as written, after checking that it names the
 * package and version the registry serves (deno.json's).
 */
export async function documentedInstall(registry: JsrServer): Promise<string> {
  const page = await Deno.readTextFile(new URL("docs/getting_started.md", ROOT));
  const line = page.split("\n").map((text) => text.trim())
    .find((text) => /^deno run .*\binstall$/.test(text));
  assert.equal(
    line,
    `deno run -A jsr:${registry.name}@${registry.version}/cli install`,
    "docs/getting_started.md installs the version deno.json publishes",
  );
  return line;
}
