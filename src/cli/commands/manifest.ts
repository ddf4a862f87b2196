// The worker-function manifest written by `deno task gen:functions`, read back by the fence
// commands, and the comparison of two of them (the old deploy and the new one).

/** One worker function of a manifest: what its entrypoint serves. */
export interface ManifestEntry {
  readonly function_name: string;
  readonly flow_slug: string;
  /** The step of a step function; `null` for a plain flow's function (it serves every step). */
  readonly step_slug: string | null;
  readonly queue_name: string;
  readonly queue_mode: string;
  /** A co-hosting function: every worker's route (the fields above are the first one's). */
  readonly workers?: readonly Omit<ManifestEntry, "function_name" | "workers">[];
}

/** A manifest that cannot be read or is not one `deno task gen:functions` writes. */
export class ManifestError extends Error {
  override name = "ManifestError";
  /** The manifest's path. */
  readonly path: string;

  constructor(path: string, detail: string) {
    super(`Cannot read manifest ${JSON.stringify(path)}: ${detail}`);
    this.path = path;
  }
}

/** Reads and checks a manifest; throws a {@linkcode ManifestError} naming what is wrong. */
export async function readManifest(path: string): Promise<readonly ManifestEntry[]> {
  let body: unknown;
  try {
    body = JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    throw new ManifestError(path, error instanceof Error ? error.message : String(error));
  }
  const functions = (body as { functions?: unknown } | null)?.functions;
  if (!Array.isArray(functions)) {
    throw new ManifestError(
      path,
      'no "functions" array; write it with deno task sluice functions generate',
    );
  }
  const seen = new Set<string>();
  return functions.map((entry: Record<string, unknown> | null, i) => {
    const text = (key: string) => typeof entry?.[key] === "string" && entry[key] !== "";
    if (
      !text("function_name") || !text("flow_slug") || !text("queue_name") ||
      !text("queue_mode") || !(entry?.step_slug === null || text("step_slug"))
    ) {
      throw new ManifestError(
        path,
        `functions[${i}] is not a worker function entry: ${JSON.stringify(entry)}`,
      );
    }
    const name = entry!.function_name as string;
    if (seen.has(name)) throw new ManifestError(path, `function ${JSON.stringify(name)} twice`);
    seen.add(name);
    return entry as unknown as ManifestEntry;
  });
}

/** How a function differs between an old and a new manifest. */
export type ManifestChange = "added" | "removed" | "changed" | "unchanged";

/** One function of either manifest with how it changed. */
export interface ManifestDiffEntry {
  readonly function_name: string;
  readonly change: ManifestChange;
  /** Its entry in the old manifest (`null` when added). */
  readonly old: ManifestEntry | null;
  /** Its entry in the new manifest (`null` when removed). */
  readonly new: ManifestEntry | null;
}

function sameRoute(a: ManifestEntry, b: ManifestEntry): boolean {
  return a.flow_slug === b.flow_slug && a.step_slug === b.step_slug &&
    a.queue_name === b.queue_name && a.queue_mode === b.queue_mode &&
    // A co-hosting function changes when any of its workers' routes does.
    JSON.stringify(a.workers ?? null) === JSON.stringify(b.workers ?? null);
}

/** Every function of either manifest, by name, with how it changed from `before` to `after`. */
export function diffManifests(
  before: readonly ManifestEntry[],
  after: readonly ManifestEntry[],
): ManifestDiffEntry[] {
  const names = [...new Set([...before, ...after].map((entry) => entry.function_name))].sort();
  return names.map((name) => {
    const old = before.find((entry) => entry.function_name === name) ?? null;
    const next = after.find((entry) => entry.function_name === name) ?? null;
    const change: ManifestChange = old === null
      ? "added"
      : next === null
      ? "removed"
      : sameRoute(old, next)
      ? "unchanged"
      : "changed";
    return { function_name: name, change, old, new: next };
  });
}

/** A manifest entry's route for a table cell: `flow.step -> queue`, `flow.*` for a plain flow. */
export function describeRoute(entry: ManifestEntry | null): string {
  return entry === null
    ? "-"
    : `${entry.flow_slug}.${entry.step_slug ?? "*"} -> ${entry.queue_name}`;
}
