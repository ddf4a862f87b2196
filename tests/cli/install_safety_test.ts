// `sluice install` on hostile or unusual project files: migration versions are real UTC times
// after every existing file, config.toml is edited only where a TOML parser confirms the edit,
// and nothing is written through a symbolic link that leads outside the project or to nothing.
// Every refusal leaves the project exactly as it was.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "smol-toml";
import { install, InstallRefusedError } from "../../src/cli/install.ts";
import { UnsafePathError } from "../../src/codegen/project_files.ts";
import { MIGRATION_FILES } from "../../src/migrations/migration_files.ts";

async function tempDir(prefix: string): Promise<{ dir: string } & AsyncDisposable> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix }));
  return { dir, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

const quiet = { out: () => {}, err: () => {} };

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

/** `YYYYMMDDHHMMSS` -> whether it is a real UTC time. */
function validTime(version: string): boolean {
  const [y, mo, d, h, mi, s] = [0, 4, 6, 8, 10, 12].map((at, i) =>
    Number(version.slice(at, at + (i === 0 ? 4 : 2)))
  );
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return date.toISOString().replace(/\D/g, "").slice(0, 14) === version;
}

async function copiesAfter(existing: string): Promise<string[]> {
  await using project = await tempDir("sluice-install-versions-");
  const migrations = join(project.dir, "supabase/migrations");
  await Deno.mkdir(migrations, { recursive: true });
  await Deno.writeTextFile(join(migrations, existing), "select 1;\n");
  await install(project.dir, quiet);
  const names = [...Deno.readDirSync(migrations)].map((entry) => entry.name)
    .sort((a, b) => (a < b ? -1 : 1));
  assert.equal(names[0], existing, "the project's own migration sorts first");
  assert.equal(names.length, MIGRATION_FILES.length + 1);
  return names.slice(1).map((name) => name.slice(0, 14));
}

Deno.test("install versions its copies as real UTC times, strictly increasing, after every existing file", async () => {
  // Across a minute, an hour, a day and a year: 2999-12-31 23:59:50 plus 22 seconds.
  const crossing = await copiesAfter("29991231235950_profiles.sql");
  assert.equal(crossing[0], "29991231235951");
  assert.equal(crossing[9], "30000101000000");
  // After an impossible time an earlier install wrote ("second" 60): the first valid time after.
  const afterImpossible = await copiesAfter("29990101235960_sluice_x.sql");
  assert.equal(afterImpossible[0], "29990102000000");
  for (const versions of [crossing, afterImpossible]) {
    for (const [i, version] of versions.entries()) {
      assert.ok(validTime(version), `${version} is not a valid UTC time`);
      if (i > 0) assert.ok(version > versions[i - 1], `${version} after ${versions[i - 1]}`);
    }
  }
  // Without later files the copies are dated now, so a migration made a minute later sorts last.
  const before = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\D/g, "")
    .slice(0, 14);
  const now = await copiesAfter("20200101000000_profiles.sql");
  assert.ok(now[0] >= before && now.every(validTime), now[0]);
});

/** config.toml texts install edits: each keeps its comments and gains exactly the policy. */
const EDITABLE: Record<string, string> = {
  "spaces in the header": '[ edge_runtime ]\nenabled = true\npolicy = "oneshot"\n',
  "trailing comments":
    '# my project\n[edge_runtime] # local functions\nenabled = true\npolicy = "oneshot" # default\n\n[api]\nport = 54321\n',
  "dotted keys":
    'project_id = "app"\nedge_runtime.enabled = true\nedge_runtime.policy = "oneshot"\n\n[api]\nport = 54321\n',
  "dotted keys without a policy": "edge_runtime.enabled = true\n\n[api]\nport = 54321\n",
  "a quoted header": '["edge_runtime"]\nenabled = true\n',
  "no edge_runtime": 'project_id = "app"\n\n[api]\nport = 54321 # the API',
};

Deno.test("install edits config.toml through a TOML parser: spaces, trailing comments, dotted keys", async () => {
  for (const [label, text] of Object.entries(EDITABLE)) {
    await using project = await tempDir("sluice-install-toml-");
    await Deno.mkdir(join(project.dir, "supabase"));
    const path = join(project.dir, "supabase/config.toml");
    await Deno.writeTextFile(path, text);
    await install(project.dir, quiet);
    const edited = await Deno.readTextFile(path);
    const before = parse(text) as Record<string, Record<string, unknown>>;
    const after = parse(edited) as Record<string, Record<string, unknown>>; // throws if invalid
    assert.equal(after.edge_runtime.policy, "per_worker", label);
    const { edge_runtime: oldRuntime, ...oldRest } = before;
    const { edge_runtime: newRuntime, ...newRest } = after;
    assert.deepEqual(
      JSON.parse(JSON.stringify(newRest)),
      JSON.parse(JSON.stringify(oldRest)),
      `${label}: the rest is unchanged`,
    );
    assert.deepEqual(
      { ...newRuntime, policy: undefined },
      { ...(oldRuntime ?? { enabled: true }), policy: undefined },
      label,
    );
    for (const comment of text.match(/#.*/g) ?? []) {
      if (!comment.includes("default")) assert.ok(edited.includes(comment), `${label}: ${comment}`);
    }
    await install(project.dir, quiet);
    assert.equal(await Deno.readTextFile(path), edited, `${label}: a second run changes nothing`);
  }
});

Deno.test("install refuses a config.toml it cannot edit safely, and writes nothing", async () => {
  const refused: Record<string, [string, RegExp]> = {
    "an inline table": ["edge_runtime = { enabled = true }\n", /its edge_runtime table is written/],
    "not TOML": ['[edge_runtime\npolicy = "oneshot"\n', /it is not valid TOML/],
    "a table twice": ["[edge_runtime]\n[edge_runtime]\n", /it is not valid TOML/],
  };
  for (const [label, [text, reason]] of Object.entries(refused)) {
    await using project = await tempDir("sluice-install-refused-");
    await Deno.mkdir(join(project.dir, "supabase"));
    await Deno.writeTextFile(join(project.dir, "supabase/config.toml"), text);
    const before = await tree(project.dir);
    await assert.rejects(install(project.dir, quiet), (error: unknown) => {
      assert.ok(error instanceof InstallRefusedError, `${label}: ${error}`);
      assert.match(error.message, /^Cannot update supabase\/config\.toml safely: /);
      assert.match(error.message, reason, label);
      assert.match(
        error.message,
        /set policy = "per_worker" in its \[edge_runtime\] table by hand/,
      );
      return true;
    });
    assert.deepEqual(await tree(project.dir), before, `${label}: nothing written`);
  }
});

Deno.test("install never writes through a symbolic link out of the project or to nothing", async () => {
  await using outside = await tempDir("sluice-install-outside-");
  const foreign = join(outside.dir, "foreign.toml");
  const foreignText = '[edge_runtime]\npolicy = "oneshot"\n';
  const cases: Record<string, [(dir: string) => Promise<void>, string, RegExp]> = {
    "config.toml linked outside": [
      (dir) => Deno.symlink(foreign, join(dir, "supabase/config.toml")),
      "outside_project",
      /^Cannot write supabase\/config\.toml: supabase\/config\.toml is a symbolic link to .*foreign\.toml, outside the project/,
    ],
    "config.toml dangling": [
      (dir) => Deno.symlink(join(outside.dir, "created.toml"), join(dir, "supabase/config.toml")),
      "dangling_link",
      /which does not exist; sluice never creates a file through a dangling link/,
    ],
    "deno.json dangling": [
      (dir) => Deno.symlink(join(outside.dir, "deno.json"), join(dir, "deno.json")),
      "dangling_link",
      /^Cannot write deno\.json: deno\.json is a symbolic link/,
    ],
    "migrations linked outside": [
      (dir) => Deno.symlink(outside.dir, join(dir, "supabase/migrations")),
      "outside_project",
      /^Cannot write supabase\/migrations\/\d{14}_20261130000000_pgmq_extension\.sql: supabase\/migrations is a symbolic link/,
    ],
  };
  for (const [label, [setUp, reason, message]] of Object.entries(cases)) {
    await Deno.writeTextFile(foreign, foreignText);
    await using project = await tempDir("sluice-install-links-");
    await Deno.mkdir(join(project.dir, "supabase"));
    await setUp(project.dir);
    const before = await tree(project.dir);
    await assert.rejects(install(project.dir, quiet), (error: unknown) => {
      assert.ok(error instanceof UnsafePathError, `${label}: ${error}`);
      assert.equal(error.reason, reason, label);
      assert.match(error.message, message, label);
      return true;
    });
    assert.deepEqual(await tree(project.dir), before, `${label}: nothing written in the project`);
    assert.deepEqual(
      Object.keys(await tree(outside.dir)),
      ["foreign.toml"],
      `${label}: nothing created outside`,
    );
    assert.equal(await Deno.readTextFile(foreign), foreignText, `${label}: outside file unchanged`);
  }

  // A link that stays inside the project is followed: the edit lands in its target.
  await using project = await tempDir("sluice-install-inner-link-");
  await Deno.mkdir(join(project.dir, "supabase"));
  await Deno.mkdir(join(project.dir, "shared"));
  await Deno.writeTextFile(join(project.dir, "shared/config.toml"), foreignText);
  await Deno.symlink("../shared/config.toml", join(project.dir, "supabase/config.toml"));
  await install(project.dir, quiet);
  assert.match(await Deno.readTextFile(join(project.dir, "shared/config.toml")), /per_worker/);
  assert.ok((await Deno.lstat(join(project.dir, "supabase/config.toml"))).isSymlink);
});
