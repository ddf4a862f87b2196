// `sluice functions generate` never writes where it should not: not over a hand-written function,
// not through a symbolic link out of the project, to nothing, or into a linked function
// directory; config.toml only where a TOML parser confirms the edit. And it removes exactly the
// directories it generated and no longer needs. Every refusal writes nothing.
import assert from "node:assert/strict";
import { join } from "node:path";
import { CodegenError, generateFunctions, UnsafePathError } from "../../src/codegen/mod.ts";
import { GENERATED_MARKER } from "../../src/codegen/render.ts";

const MOD_URL = new URL("../../mod.ts", import.meta.url).href;

const FLOWS = `import { Flow } from ${JSON.stringify(MOD_URL)};

export const orders = new Flow({ slug: "orders" }).step({ slug: "load" }, () => 1);
`;

async function tempDir(prefix: string): Promise<{ dir: string } & AsyncDisposable> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix }));
  return { dir, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

async function project(flows = FLOWS) {
  const temp = await tempDir("sluice-codegen-safety-");
  await Deno.mkdir(join(temp.dir, "supabase/functions"), { recursive: true });
  await Deno.writeTextFile(join(temp.dir, "flows.ts"), flows);
  await Deno.writeTextFile(
    join(temp.dir, "deno.json"),
    JSON.stringify({ sluice: { flows: "./flows.ts" } }),
  );
  return Object.assign(temp, { configPath: join(temp.dir, "deno.json") });
}

/** Every entry under `dir` (links as links), path -> text or link target. */
async function tree(dir: string, base = ""): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  for await (const entry of Deno.readDir(join(dir, base))) {
    const path = base === "" ? entry.name : `${base}/${entry.name}`;
    if (entry.isSymlink) entries[path] = `-> ${await Deno.readLink(join(dir, path))}`;
    else if (entry.isDirectory) Object.assign(entries, await tree(dir, path));
    else entries[path] = await Deno.readTextFile(join(dir, path));
  }
  return entries;
}

async function refused(
  configPath: string,
  check: (error: Error) => void,
): Promise<void> {
  for (const mode of [false, true]) {
    await assert.rejects(generateFunctions({ configPath, check: mode }), (error: unknown) => {
      assert.ok(error instanceof Error);
      check(error);
      return true;
    });
  }
}

Deno.test("functions generate leaves a hand-written function alone and says why", async () => {
  await using p = await project();
  const handWritten = "Deno.serve(() => new Response('my own orders function'));\n";
  await Deno.mkdir(join(p.dir, "supabase/functions/orders"));
  await Deno.writeTextFile(join(p.dir, "supabase/functions/orders/index.ts"), handWritten);
  const before = await tree(p.dir);
  await refused(p.configPath, (error) => {
    assert.ok(error instanceof UnsafePathError);
    assert.equal(error.reason, "not_generated");
    assert.match(
      error.message,
      /^Cannot generate functions: supabase\/functions\/orders\/index\.ts exists and was not written by sluice .*never overwrites a hand-written file/,
    );
  });
  assert.deepEqual(await tree(p.dir), before, "nothing written");
});

Deno.test("functions generate refuses symbolic links out of the project, to nothing, and as a function directory", async () => {
  await using outside = await tempDir("sluice-codegen-outside-");
  const cases: Record<string, [(dir: string) => Promise<void>, string]> = {
    "a function directory linked outside": [
      (dir) => Deno.symlink(outside.dir, join(dir, "supabase/functions/orders")),
      "symlinked_function",
    ],
    "a function directory linked inside": [
      async (dir) => {
        await Deno.mkdir(join(dir, "elsewhere"));
        await Deno.symlink("../../elsewhere", join(dir, "supabase/functions/orders"));
      },
      "symlinked_function",
    ],
    "a dangling entrypoint": [
      async (dir) => {
        await Deno.mkdir(join(dir, "supabase/functions/orders"));
        await Deno.symlink(
          join(outside.dir, "created.ts"),
          join(dir, "supabase/functions/orders/index.ts"),
        );
      },
      "dangling_link",
    ],
    "the manifest linked outside": [
      async (dir) => {
        await Deno.writeTextFile(join(outside.dir, "manifest.json"), `{"$comment": "x"}\n`);
        await Deno.symlink(
          join(outside.dir, "manifest.json"),
          join(dir, "supabase/functions/sluice.manifest.json"),
        );
      },
      "outside_project",
    ],
    "config.toml linked outside": [
      async (dir) => {
        await Deno.writeTextFile(join(outside.dir, "config.toml"), 'project_id = "x"\n');
        await Deno.symlink(join(outside.dir, "config.toml"), join(dir, "supabase/config.toml"));
      },
      "outside_project",
    ],
  };
  for (const [label, [setUp, reason]] of Object.entries(cases)) {
    await using p = await project();
    await setUp(p.dir);
    const before = await tree(p.dir);
    const outsideBefore = await tree(outside.dir);
    await refused(p.configPath, (error) => {
      assert.ok(error instanceof UnsafePathError, `${label}: ${error}`);
      assert.equal(error.reason, reason, `${label}: ${error.message}`);
      assert.match(error.message, /^Cannot (generate functions:|write) /, label);
    });
    assert.deepEqual(await tree(p.dir), before, `${label}: nothing written in the project`);
    assert.deepEqual(await tree(outside.dir), outsideBefore, `${label}: nothing written outside`);
  }
});

Deno.test("functions generate reads config.toml with a TOML parser: a function defined by dotted keys or an inline table conflicts", async () => {
  const conflicting: Record<string, string> = {
    "dotted keys": "functions.orders.verify_jwt = true\n",
    "an inline table": "functions = { orders = { verify_jwt = true } }\n",
    "a spaced, quoted header": '[ functions . "orders" ] # mine\nverify_jwt = true\n',
  };
  for (const [label, text] of Object.entries(conflicting)) {
    await using p = await project();
    await Deno.writeTextFile(join(p.dir, "supabase/config.toml"), text);
    const before = await tree(p.dir);
    await refused(p.configPath, (error) => {
      assert.ok(error instanceof CodegenError, `${label}: ${error}`);
      assert.equal(error.reason, "config_toml_conflict");
      assert.match(error.message, /hand-written \[functions\.orders\] table/, label);
    });
    assert.deepEqual(await tree(p.dir), before, `${label}: nothing written`);
  }
  // A document the generated tables cannot be appended to is refused, not made invalid.
  await using p = await project();
  await Deno.writeTextFile(join(p.dir, "supabase/config.toml"), "functions = { other = {} }\n");
  await refused(p.configPath, (error) => {
    assert.ok(error instanceof CodegenError);
    assert.match(error.message, /would change more than them/);
  });
  // Comments, spacing and the other tables of a valid file stay as they were.
  const user =
    '# mine\n[ edge_runtime ] # local\npolicy = "per_worker"\n\n[functions.other]\nx = 1';
  await Deno.writeTextFile(join(p.dir, "supabase/config.toml"), user);
  await generateFunctions({ configPath: p.configPath });
  const written = await Deno.readTextFile(join(p.dir, "supabase/config.toml"));
  assert.ok(written.startsWith(`${user}\n\n# >>> sluice worker functions`), written);
  assert.match(written, /\[functions\."orders"\]\nenabled = true\nverify_jwt = false/);
});

Deno.test("functions generate removes the directories it generated and no longer needs, and nothing else", async () => {
  await using p = await project();
  const functions = join(p.dir, "supabase/functions");
  const generated = (name: string) =>
    `// ${GENERATED_MARKER}\n// Worker function "${name}".\nexport {};\n`;
  const denoJson = `${JSON.stringify({ $comment: GENERATED_MARKER, imports: {} })}\n`;
  // Three functions a removed flow left: one as generated, one a plain-Deno run left its lockfile
  // in, one with a file of the user's beside the generated ones.
  for (const name of ["gone", "gone-locked", "gone-kept"]) {
    await Deno.mkdir(join(functions, name));
    await Deno.writeTextFile(join(functions, name, "index.ts"), generated(name));
    await Deno.writeTextFile(join(functions, name, "deno.json"), denoJson);
  }
  await Deno.writeTextFile(join(functions, "gone-locked/deno.lock"), '{ "version": "5" }\n');
  await Deno.writeTextFile(join(functions, "gone-kept/NOTES.md"), "mine\n");
  // Not the generator's: a hand-written function, and a link to a generated-looking directory.
  await Deno.mkdir(join(functions, "mine"));
  await Deno.writeTextFile(join(functions, "mine/index.ts"), "Deno.serve(() => new Response());\n");
  await Deno.mkdir(join(p.dir, "linked-target"));
  await Deno.writeTextFile(join(p.dir, "linked-target/index.ts"), generated("linked"));
  await Deno.symlink("../../linked-target", join(functions, "linked"));

  const result = await generateFunctions({ configPath: p.configPath });
  assert.deepEqual(
    result.files.filter((file) => file.status === "extra").map((file) => file.path),
    [
      "supabase/functions/gone-kept/deno.json",
      "supabase/functions/gone-kept/index.ts",
      "supabase/functions/gone-locked/deno.json",
      "supabase/functions/gone-locked/deno.lock",
      "supabase/functions/gone-locked/index.ts",
      "supabase/functions/gone/deno.json",
      "supabase/functions/gone/index.ts",
    ],
  );
  const left = Object.keys(await tree(functions)).sort();
  assert.deepEqual(left, [
    "gone-kept/NOTES.md",
    "linked",
    "mine/index.ts",
    "orders/deno.json",
    "orders/index.ts",
    "sluice.config.toml",
    "sluice.manifest.json",
  ]);
  assert.equal(
    await Deno.readTextFile(join(p.dir, "linked-target/index.ts")),
    generated("linked"),
  );
  // The generated deno.json turns Deno's lockfile off, so a plain run leaves none.
  const orders = JSON.parse(await Deno.readTextFile(join(functions, "orders/deno.json")));
  assert.equal(orders.lock, false);
});
