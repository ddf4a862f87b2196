// The public type surface: `deno doc --json` of every entry point in deno.json's `exports`,
// normalized so moving code does not change it (no source locations, no doc prose, paths relative
// to the repository root, nodes sorted). tests/release/api_snapshot.json holds the committed copy;
// `deno task api:snapshot` rewrites it.

import { ROOT } from "./_releases.ts";

/** Where the committed snapshot lives. */
export const SNAPSHOT = new URL("tests/release/api_snapshot.json", ROOT);

const DROPPED_KEYS = new Set(["location", "jsDoc"]);

function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === "string") return value.replaceAll(ROOT.href, "./");
  if (value === null || typeof value !== "object") return value;
  const result: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    if (DROPPED_KEYS.has(key)) continue;
    result[key] = normalize((value as Record<string, unknown>)[key]);
  }
  return result;
}

/** The normalized surface, keyed by export name (".", "./client", ...), as pretty JSON. */
export async function apiSurface(): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))) as {
    exports: Record<string, string>;
  };
  const surface: Record<string, unknown> = {};
  for (const name of Object.keys(config.exports).sort()) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["doc", "--json", new URL(config.exports[name], ROOT).pathname],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(
        `Cannot document export ${name} (${config.exports[name]}): ${
          new TextDecoder().decode(output.stderr).trim()
        }`,
      );
    }
    const doc = JSON.parse(new TextDecoder().decode(output.stdout)) as { nodes: unknown[] };
    const nodes = doc.nodes.map(normalize).map((node) => JSON.stringify(node)).sort();
    surface[name] = nodes.map((node) => JSON.parse(node));
  }
  return JSON.stringify(surface, null, 2) + "\n";
}

if (import.meta.main) {
  await Deno.writeTextFile(SNAPSHOT, await apiSurface());
  console.log(`wrote ${SNAPSHOT.pathname.slice(ROOT.pathname.length)}`);
}
