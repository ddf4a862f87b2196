import assert from "node:assert/strict";

// The import graph of the library as Deno resolves it (`deno info --json`): every module under
// src/, with its runtime (`code`) and type-only (`type`) dependencies.

const ROOT = new URL("../../", import.meta.url);
const SRC = new URL("src/", ROOT).href;
const ENTRY_POINTS = [
  "mod.ts",
  "src/edge/mod.ts",
  "src/browser/mod.ts",
  "src/testing/mod.ts",
  "src/codegen/mod.ts",
  "src/ops/cli.ts",
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
      if (!module.specifier.startsWith(SRC) && !module.specifier.endsWith("/mod.ts")) continue;
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

Deno.test("the worker's runtime never loads src/client/", () => {
  const reached = loadedBy(`${SRC}worker/_runtime.ts`);
  assert.ok(graph.has(`${SRC}worker/_runtime.ts`));
  const client = [...reached].filter((file) => file.startsWith(`${SRC}client/`)).map(relative);
  assert.deepEqual(client, []);
});

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
