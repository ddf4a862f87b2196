import assert from "node:assert/strict";

// Each dependency of the package is pinned by its full specifier in the one module of src/ that
// imports it (a package loaded by URL has no import map); deno.json's imports, which the
// repository's tests, scripts and benchmarks resolve bare names with, must pin the same versions
// (docs/architecture.md).

const ROOT = new URL("../../", import.meta.url);

async function sourceFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
    if (entry.isDirectory) files.push(...await sourceFiles(`${dir}${entry.name}/`));
    else if (entry.name.endsWith(".ts")) files.push(`${dir}${entry.name}`);
  }
  return files;
}

Deno.test("every npm: pin of src/ is the pin deno.json's imports hold for the same package", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))) as {
    imports: Record<string, string>;
  };
  const pins = new Map<string, Set<string>>();
  for (const file of await sourceFiles("src/")) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    for (
      const [, specifier, name] of text.matchAll(
        /^import[^"]*"(npm:((?:@[^/@]+\/)?[^/@"]+)@[^"/]+)[^"]*"/gm,
      )
    ) {
      pins.set(name, (pins.get(name) ?? new Set()).add(specifier));
    }
  }
  assert.ok(pins.has("postgres"), "the driver's pin in src/db/driver/postgres.ts was not found");
  const problems: string[] = [];
  for (const [name, specifiers] of pins) {
    if (specifiers.size > 1) problems.push(`${name} is pinned twice in src/: ${[...specifiers]}`);
    const held = config.imports[name];
    for (const specifier of specifiers) {
      if (held !== specifier) problems.push(`${name}: src/ pins ${specifier}, deno.json ${held}`);
    }
  }
  assert.deepEqual(problems, []);
});

/** Files of `dir` (recursively) whose names end in one of `endings`, skipping dot-directories. */
async function filesUnder(dir: string, endings: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    if (entry.isDirectory) files.push(...await filesUnder(`${dir}${entry.name}/`, endings));
    else if (endings.some((ending) => entry.name.endsWith(ending))) {
      files.push(`${dir}${entry.name}`);
    }
  }
  return files;
}

Deno.test("every exact npm: version written in docs, examples, comments or configs is deno.json's", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))) as {
    imports: Record<string, string>;
  };
  const files = [
    "README.md",
    ...await filesUnder("docs/", [".md"]),
    ...await filesUnder("src/", [".ts"]),
    ...await filesUnder("examples/", [".ts", ".json", ".md"]),
    ...await filesUnder("supabase/functions/", [".json"]),
    ...await filesUnder("bench/", [".ts"]),
    ...await filesUnder("dev/", [".ts"]),
    ...await filesUnder("scripts/", [".ts"]),
  ];
  const problems: string[] = [];
  let seen = 0;
  for (const file of files) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    // Exact versions only: a range such as `@2` in a user's example is theirs to choose.
    for (
      const [specifier, name] of text.matchAll(/npm:((?:@[\w.-]+\/)?[\w.-]+)@\d+\.\d+\.\d+\b/g)
    ) {
      const held = config.imports[name];
      if (held === undefined) continue;
      seen++;
      if (held !== specifier) problems.push(`${file}: ${specifier}, deno.json ${held}`);
    }
  }
  assert.ok(seen > 0, "no exact npm: version found: the pattern no longer matches");
  assert.deepEqual(problems, []);
});
