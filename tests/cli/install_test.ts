// `sluice install` on the files of a Supabase project: what it refuses, what it copies where, how
// it sets up config.toml and deno.json, and that an upgrade adds only the new migrations.
import assert from "node:assert/strict";
import { join } from "node:path";
import { install, NotASupabaseProjectError } from "../../src/cli/install.ts";
import { MIGRATION_FILES } from "../../src/migrations/migration_files.ts";

async function tempProject(): Promise<{ dir: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-install-" });
  return { dir, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

function capture() {
  const out: string[] = [];
  return {
    out,
    io: { out: (line: string) => out.push(line), err: (line: string) => out.push(line) },
  };
}

const sorted = (dir: string) =>
  [...Deno.readDirSync(dir)].map((entry) => entry.name).sort((a, b) => (a < b ? -1 : 1));

Deno.test("install refuses a directory without supabase/ and writes nothing", async () => {
  await using project = await tempProject();
  await assert.rejects(install(project.dir, capture().io), (error: unknown) => {
    assert.ok(error instanceof NotASupabaseProjectError);
    assert.equal(error.projectDir, project.dir);
    assert.match(error.message, /^Cannot install sluice: .* has no supabase\/ directory/);
    return true;
  });
  assert.deepEqual(sorted(project.dir), []);
});

Deno.test("install copies the migrations after the project's own, sets the edge runtime policy, and an upgrade adds only new files", async () => {
  await using project = await tempProject();
  const migrations = join(project.dir, "supabase/migrations");
  await Deno.mkdir(migrations, { recursive: true });
  // A project whose own latest migration is dated in the future still gets sluice's after it.
  await Deno.writeTextFile(join(migrations, "29990101000000_profiles.sql"), "select 1;\n");
  await Deno.writeTextFile(
    join(project.dir, "supabase/config.toml"),
    'project_id = "app"\n\n[edge_runtime]\nenabled = true\npolicy = "oneshot"\n\n[api]\nport = 54321\n',
  );
  await Deno.writeTextFile(join(project.dir, "deno.json"), '{ "imports": {} }\n');

  const first = capture();
  assert.equal(await install(project.dir, first.io), MIGRATION_FILES.length + 1);
  const names = sorted(migrations);
  assert.equal(names[0], "29990101000000_profiles.sql");
  assert.deepEqual(
    names.slice(1),
    MIGRATION_FILES.map((file, i) => `${29990101000001n + BigInt(i)}_${file}`),
  );
  const original = await Deno.readTextFile(
    new URL(`../../supabase/migrations/${MIGRATION_FILES[1]}`, import.meta.url),
  );
  assert.equal(await Deno.readTextFile(join(migrations, names[2])), original, "copied unchanged");
  assert.equal(
    await Deno.readTextFile(join(project.dir, "supabase/config.toml")),
    'project_id = "app"\n\n[edge_runtime]\nenabled = true\npolicy = "per_worker"\n\n[api]\nport = 54321\n',
  );
  assert.ok(
    first.out.includes('updated supabase/config.toml: [edge_runtime] policy = "per_worker"'),
  );
  assert.ok(
    first.out.some((line) =>
      /deno\.json: left as is; add "@sluice\/sluice": "jsr:@sluice\/sluice@/.test(line)
    ),
  );
  assert.equal(await Deno.readTextFile(join(project.dir, "deno.json")), '{ "imports": {} }\n');

  // An upgrade: the last migration is new to this project. Only it is added, after everything.
  const last = names.at(-1)!;
  await Deno.remove(join(migrations, last));
  await Deno.writeTextFile(join(migrations, "29991231000000_later.sql"), "select 2;\n");
  const upgrade = capture();
  assert.equal(await install(project.dir, upgrade.io), 1);
  assert.deepEqual(
    upgrade.out[0],
    `created supabase/migrations/29991231000001_${MIGRATION_FILES.at(-1)}`,
  );

  const again = capture();
  assert.equal(await install(project.dir, again.io), 0);
  assert.equal(again.out.at(-1), "install: nothing to do; sluice is installed");
});

Deno.test("install creates config.toml and deno.json when absent, and never rewrites a copy", async () => {
  await using project = await tempProject();
  await Deno.mkdir(join(project.dir, "supabase"));
  const first = capture();
  await install(project.dir, first.io);
  const toml = await Deno.readTextFile(join(project.dir, "supabase/config.toml"));
  assert.match(toml, /\[edge_runtime\]\nenabled = true\n(#.*\n)*policy = "per_worker"\n$/);
  const denoJson = JSON.parse(await Deno.readTextFile(join(project.dir, "deno.json")));
  assert.equal(denoJson.imports["@sluice/sluice"], "jsr:@sluice/sluice@0.1.0");
  assert.equal(
    denoJson.tasks.sluice,
    "deno run -A --config deno.json jsr:@sluice/sluice@0.1.0/cli",
  );

  const migrations = join(project.dir, "supabase/migrations");
  const copy = sorted(migrations)[0];
  await Deno.writeTextFile(join(migrations, copy), "-- edited by hand\n");
  await install(project.dir, capture().io);
  assert.equal(await Deno.readTextFile(join(migrations, copy)), "-- edited by hand\n");
});
