import assert from "node:assert/strict";

// The import graph of the library as Deno resolves it (`deno info --json`): every module under
// src/, with its runtime (`code`) and type-only (`type`) dependencies.

const ROOT = new URL("../../", import.meta.url);
const SRC = new URL("src/", ROOT).href;
const ENTRY_POINTS = [
  "mod.ts",
  "src/client/mod.ts",
  "src/admin/mod.ts",
  "src/worker/mod.ts",
  "src/edge/mod.ts",
  "src/browser/mod.ts",
  "src/testing/mod.ts",
  "src/codegen/mod.ts",
  "src/cli/commands/run_ops_command.ts",
  "cli.ts",
];

interface Dependency {
  readonly code?: { readonly specifier: string };
  readonly type?: { readonly specifier: string };
}

interface Module {
  readonly specifier: string;
  readonly dependencies?: readonly Dependency[];
}

interface Edges {
  readonly code: readonly string[];
  readonly type: readonly string[];
}

async function importGraph(): Promise<Map<string, Edges>> {
  const graph = new Map<string, Edges>();
  for (const entry of ENTRY_POINTS) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", new URL(entry, ROOT).pathname],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.ok(output.success, `deno info ${entry} failed`);
    const info = JSON.parse(new TextDecoder().decode(output.stdout)) as { modules: Module[] };
    for (const module of info.modules) {
      const top = module.specifier.startsWith(ROOT.href) &&
        !module.specifier.slice(ROOT.href.length).includes("/");
      if (!module.specifier.startsWith(SRC) && !top) continue;
      const dependencies = module.dependencies ?? [];
      graph.set(module.specifier, {
        code: dependencies.flatMap((d) => d.code ? [d.code.specifier] : []),
        type: dependencies.flatMap((d) => d.type ? [d.type.specifier] : []),
      });
    }
  }
  return graph;
}

const graph = await importGraph();
const relative = (specifier: string) => specifier.slice(ROOT.href.length);

Deno.test("the import graph covers every TypeScript file under src/", async () => {
  const files: string[] = [];
  const walk = async (dir: URL) => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) await walk(new URL(`${entry.name}/`, dir));
      else if (entry.name.endsWith(".ts")) files.push(new URL(entry.name, dir).href);
    }
  };
  await walk(new URL(SRC));
  const unreached = files.filter((file) => !graph.has(file)).map(relative);
  assert.deepEqual(unreached, [], "add an entry point that reaches these files");
});

Deno.test("no import cycle between files, type-only imports included", () => {
  const state = new Map<string, "visiting" | "done">();
  const cycles: string[] = [];
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === "done") return;
    if (state.get(file) === "visiting") {
      cycles.push([...path.slice(path.indexOf(file)), file].map(relative).join(" -> "));
      return;
    }
    state.set(file, "visiting");
    const edges = graph.get(file);
    for (const next of [...edges?.code ?? [], ...edges?.type ?? []]) {
      if (graph.has(next)) visit(next, [...path, file]);
    }
    state.set(file, "done");
  };
  for (const file of graph.keys()) visit(file, []);
  assert.deepEqual(cycles, []);
});

Deno.test("only src/db/ imports the postgres driver at run time", () => {
  const offenders = [...graph]
    .filter(([file, edges]) =>
      file.startsWith(SRC) && !file.startsWith(`${SRC}db/`) &&
      edges.code.some((specifier) => specifier.startsWith("npm:postgres"))
    )
    .map(([file]) => relative(file));
  assert.deepEqual(offenders, []);
});

/** Every file `file` loads at run time, itself included (type-only imports left out). */
function loadedBy(file: string): Set<string> {
  const reached = new Set<string>();
  const visit = (next: string) => {
    if (reached.has(next)) return;
    reached.add(next);
    for (const code of graph.get(next)?.code ?? []) visit(code);
  };
  visit(file);
  return reached;
}

Deno.test("the browser client never loads the postgres driver or the database seam", () => {
  const reached = loadedBy(`${SRC}browser/mod.ts`);
  assert.ok(graph.has(`${SRC}browser/mod.ts`));
  const offenders = [...reached]
    .filter((file) => file.startsWith(`${SRC}db/`) || file.startsWith(`${SRC}client/`))
    .map(relative);
  assert.deepEqual(offenders, []);
  assert.ok(
    ![...graph].some(([file, edges]) =>
      reached.has(file) && edges.code.some((specifier) => specifier.startsWith("npm:postgres"))
    ),
  );
});

/**
 * The layer picture (docs/architecture.md#layers): which folder under src/ (or top-level entry
 * file) may import which, type-only imports included. A folder imports its own files freely; an
 * import not in its row fails. `db` imports nothing of src/: the seam is below every layer that
 * runs SQL. `deploy` (compile a flow, switch an alias) sits below both `client` and `worker`,
 * which do not import each other: the worker's startup compiles through it, never through the
 * producer API.
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  "dsl": [],
  "events": ["dsl"],
  "db": [],
  "deploy": ["db", "dsl"],
  "telemetry": [],
  "client": ["db", "deploy", "dsl", "events", "telemetry"],
  "browser": ["dsl", "events"],
  "worker": ["db", "deploy", "dsl", "telemetry"],
  "edge": ["db", "deploy", "dsl", "telemetry", "worker"],
  "codegen": ["dsl"],
  "dashboard": ["client", "db", "deploy", "dsl", "events"],
  "migrations": ["db"],
  "embedded": ["db", "migrations"],
  "testing": ["client", "db", "dsl", "embedded", "migrations", "worker"],
  "cli": [
    "client",
    "codegen",
    "dashboard",
    "db",
    "deploy",
    "dsl",
    "embedded",
    "events",
    "migrations",
    "worker",
  ],
  "admin": ["client", "deploy", "dsl", "worker"],
  "mod.ts": ["client", "dsl", "worker"],
  "cli.ts": ["cli"],
};

/**
 * Single imports across the table, each with its reason. `ctx.sql` is typed as the driver's client
 * (tests/types/flow_inference.ts holds that). The DSL names that type through the seam because
 * `src/db/driver/postgres.ts` is the one place the driver's pinned specifier is written: a bare
 * `postgres` import does not resolve in a user's project that loads sluice by URL (the generated
 * functions' check in tests/codegen/generate_test.ts fails with it). Type-only: nothing is loaded.
 */
const EXCEPTIONS: ReadonlySet<string> = new Set([
  "src/dsl/context.ts -> src/db/driver/postgres.ts",
]);

/** The layer of a file: its folder under src/, or the name of a top-level entry file. */
function layerOf(specifier: string): string | undefined {
  if (!specifier.startsWith(ROOT.href)) return undefined;
  const path = relative(specifier);
  if (path.startsWith("src/")) return path.split("/")[1];
  return path.includes("/") ? undefined : path;
}

/** Every import of `graph` that its file's row of `layers` does not allow. */
export function importsAgainst(
  edges: ReadonlyMap<string, Edges>,
  layers: Readonly<Record<string, readonly string[]>>,
): string[] {
  const offenders: string[] = [];
  for (const [file, { code, type }] of edges) {
    const from = layerOf(file);
    if (from === undefined) continue;
    for (const target of [...code, ...type]) {
      const to = layerOf(target);
      if (to === undefined || to === from) continue;
      const edge = `${relative(file)} -> ${relative(target)}`;
      if (!(layers[from] ?? []).includes(to) && !EXCEPTIONS.has(edge)) offenders.push(edge);
    }
  }
  return [...new Set(offenders)].sort();
}

Deno.test("the layer table names every folder under src/ and every top-level entry file", async () => {
  const folders: string[] = [];
  for await (const entry of Deno.readDir(new URL(SRC))) {
    if (entry.isDirectory) folders.push(entry.name);
  }
  const layers = new Set([...graph.keys()].map(layerOf).filter((layer) => layer !== undefined));
  const missing = [...new Set([...folders, ...layers])].filter((name) => !(name in LAYERS));
  assert.deepEqual(missing.sort(), [], "add these to LAYERS (and to docs/architecture.md)");
});

Deno.test("every import follows the layer table", () => {
  assert.deepEqual(importsAgainst(graph, LAYERS), []);
});

Deno.test("every exception is still an import (a fixed one is removed)", () => {
  const all = new Set(
    [...graph].flatMap(([file, { code, type }]) =>
      [...code, ...type].map((target) => `${relative(file)} -> ${relative(target)}`)
    ),
  );
  assert.deepEqual([...EXCEPTIONS].filter((edge) => !all.has(edge)), []);
});

Deno.test("the layer check fails on an import against the table", () => {
  const probe = new Map<string, Edges>([
    [`${SRC}worker/start_worker.ts`, { code: [`${SRC}client/compile_flow.ts`], type: [] }],
    [`${SRC}db/event_queries.ts`, { code: [], type: [`${SRC}events/run_event.ts`] }],
    [`${SRC}client/get_run.ts`, { code: [`${SRC}db/client_queries.ts`], type: [] }],
  ]);
  assert.deepEqual(importsAgainst(probe, LAYERS), [
    "src/db/event_queries.ts -> src/events/run_event.ts",
    "src/worker/start_worker.ts -> src/client/compile_flow.ts",
  ]);
});

Deno.test("docs/architecture.md draws the layer table the test holds", async () => {
  const doc = await Deno.readTextFile(new URL("docs/architecture.md", ROOT));
  const section = doc.slice(doc.indexOf("## Layers"));
  const open = section.indexOf("```\n") + 4;
  const block = section.slice(open, section.indexOf("\n```", open));
  const drawn: Record<string, string[]> = {};
  for (const line of block.split("\n")) {
    const match = /^(\S+)\s+->\s+(.*?)\s*(\(.*\))?$/.exec(line.trim());
    assert.ok(match, `cannot read the layer line ${JSON.stringify(line)}`);
    const name = (path: string) => path.replace(/^src\//, "");
    drawn[name(match[1])] = match[2].startsWith("nothing")
      ? []
      : match[2].split(",").map((target) => name(target.trim())).sort();
  }
  const held = Object.fromEntries(
    Object.entries(LAYERS).map(([layer, targets]) => [layer, [...targets].sort()]),
  );
  assert.deepEqual(drawn, held, "redraw the table in docs/architecture.md#layers");
});

/**
 * The files of the repository (TypeScript outside .tools/), for the `_private` rule: a module of
 * `src/` whose name starts with `_` belongs to its folder.
 */
async function repositoryFiles(): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      if (entry.isDirectory) await walk(`${dir}${entry.name}/`);
      else if (entry.name.endsWith(".ts")) files.push(`${dir}${entry.name}`);
    }
  };
  await walk("");
  return files;
}

const RELATIVE_IMPORT = /(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

/** Imports of a `src/**\/_*.ts` module from another folder, as `from -> to` lines. */
function privateImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (const [, specifier] of text.matchAll(RELATIVE_IMPORT)) {
    const target = new URL(specifier, new URL(file, ROOT)).href.slice(ROOT.href.length);
    const folder = (path: string) => path.slice(0, path.lastIndexOf("/") + 1);
    const name = target.slice(target.lastIndexOf("/") + 1);
    if (target.startsWith("src/") && name.startsWith("_") && folder(target) !== folder(file)) {
      found.push(`${file} -> ${target}`);
    }
  }
  return found;
}

Deno.test("a module of src/ named _*.ts is imported only from its own folder", async () => {
  const found: string[] = [];
  for (const file of await repositoryFiles()) {
    found.push(...privateImports(file, await Deno.readTextFile(new URL(file, ROOT))));
  }
  assert.deepEqual(
    found,
    [],
    `rename the module (it is used outside its folder) or move the import:\n${found.join("\n")}`,
  );
});

Deno.test("the _private rule flags an import of another folder's _module, not of its own", () => {
  assert.deepEqual(
    privateImports(
      "src/cli/main.ts",
      'import { a } from "../ops/_secret.ts";\nimport { b } from "./_local.ts";\n' +
        'import { c } from "../ops/public.ts";',
    ),
    ["src/cli/main.ts -> src/ops/_secret.ts"],
  );
  assert.deepEqual(
    privateImports("tests/x_test.ts", 'import { d } from "../src/edge/_host.ts";'),
    ["tests/x_test.ts -> src/edge/_host.ts"],
  );
});
