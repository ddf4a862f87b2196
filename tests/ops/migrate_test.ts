import assert from "node:assert/strict";
import {
  migrate,
  MigrationChangedError,
  MigrationError,
  MIGRATIONS_DIRECTORY,
} from "../../src/migrations/migrate.ts";
import { MIGRATION_FILES } from "../../src/migrations/migration_files.ts";
import { freshDatabase, installedPgmq } from "../_db.ts";

// On an empty database migrate() installs PGMQ the way the server allows: the extension where it is
// offered (SLUICE_TEST_PGMQ=extension), else the compat layer.
const INSTALLS = installedPgmq();

async function shippedMigrations(): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(MIGRATIONS_DIRECTORY)) {
    if (entry.isFile && entry.name.endsWith(".sql")) files.push(entry.name);
  }
  return files.sort();
}

/** A migrations directory holding `files` (name -> SQL), removed on dispose. */
async function migrationsDir(files: Record<string, string>) {
  const path = await Deno.makeTempDir({ prefix: "sluice-migrations-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${path}/${name}`, text);
  }
  return {
    path,
    write: (name: string, text: string) => Deno.writeTextFile(`${path}/${name}`, text),
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

async function recorded(sql: import("postgres").Sql): Promise<string[]> {
  const rows = await sql<
    { file: string }[]
  >`select file from sluice_migrations.applied order by file`;
  return rows.map((row) => row.file);
}

async function tableExists(sql: import("postgres").Sql, name: string): Promise<boolean> {
  const [row] = await sql`select to_regclass(${name}) is not null as exists`;
  return row.exists;
}

Deno.test("migrate() installs PGMQ and applies every shipped migration in filename order", async () => {
  await using db = await freshDatabase({ empty: true });
  const files = await shippedMigrations();
  assert.ok(files.length > 0);
  assert.equal(files[0], "20261130000000_pgmq_extension.sql");

  const result = await migrate(db.sql);
  assert.deepEqual(result, { pgmq: INSTALLS, applied: files, appliedBySupabase: [] });
  assert.deepEqual(await recorded(db.sql), files);
});

Deno.test("migrate() run again is a no-op", async () => {
  await using db = await freshDatabase({ empty: true });
  await migrate(db.sql);
  const before = await db.sql`select file, applied_at from sluice_migrations.applied order by file`;
  assert.deepEqual(await migrate(db.sql), { pgmq: "present", applied: [], appliedBySupabase: [] });
  const after = await db.sql`select file, applied_at from sluice_migrations.applied order by file`;
  assert.deepEqual([...after], [...before]);
});

Deno.test("a failing migration rolls back whole, its error names the file, and a re-run resumes at it", async () => {
  await using db = await freshDatabase({ empty: true });
  await using dir = await migrationsDir({
    "001_a.sql": "create table a (id int);",
    "002_b.sql": "create table b (id int);\ninsert into b values (1);\nselect 1 / 0;\n",
    "003_c.sql": "create table c (id int);",
  });

  const error = await migrate(db.sql, { directory: dir.path }).then(() => undefined, (e) => e);
  assert.ok(error instanceof MigrationError);
  assert.equal(error.file, "002_b.sql");
  assert.equal(
    error.message,
    'Cannot apply migration "002_b.sql": division by zero (SQLSTATE 22012)',
  );
  assert.equal(await tableExists(db.sql, "a"), true);
  assert.equal(await tableExists(db.sql, "b"), false);
  assert.equal(await tableExists(db.sql, "c"), false);
  assert.deepEqual(await recorded(db.sql), ["001_a.sql"]);

  await dir.write("002_b.sql", "create table b (id int);\ninsert into b values (1);\n");
  const result = await migrate(db.sql, { directory: dir.path });
  assert.deepEqual(result, {
    pgmq: "present",
    applied: ["002_b.sql", "003_c.sql"],
    appliedBySupabase: [],
  });
  const [b] = await db.sql`select count(*)::int as n from b`;
  assert.equal(b.n, 1);
});

Deno.test("a migration with a syntax error is reported with its file and line", async () => {
  await using db = await freshDatabase({ empty: true });
  await using dir = await migrationsDir({
    "001_typo.sql": "create table ok (id int);\n\ncreate tabel broken (id int);\n",
  });
  const error = await migrate(db.sql, { directory: dir.path }).then(() => undefined, (e) => e);
  assert.ok(error instanceof MigrationError);
  assert.equal(
    error.message,
    'Cannot apply migration "001_typo.sql": syntax error at or near "tabel" at line 3 (SQLSTATE 42601)',
  );
  assert.equal(await tableExists(db.sql, "ok"), false);
});

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function checksums(sql: import("postgres").Sql): Promise<Record<string, string | null>> {
  const rows = await sql<{ file: string; checksum: string | null }[]>`
    select file, checksum from sluice_migrations.applied order by file
  `;
  return Object.fromEntries(rows.map((row) => [row.file, row.checksum]));
}

Deno.test("migrate() records the sha256 of each applied file; CRLF line endings are the same file", async () => {
  await using db = await freshDatabase({ empty: true });
  const a = "create table a (id int);\n";
  await using dir = await migrationsDir({ "001_a.sql": a });
  await migrate(db.sql, { directory: dir.path });
  assert.deepEqual(await checksums(db.sql), { "001_a.sql": await sha256(a) });

  await dir.write("001_a.sql", a.replaceAll("\n", "\r\n"));
  assert.deepEqual(await migrate(db.sql, { directory: dir.path }), {
    pgmq: "present",
    applied: [],
    appliedBySupabase: [],
  });
});

Deno.test("migrate() refuses to run when an applied file has changed, names it, and applies nothing", async () => {
  await using db = await freshDatabase({ empty: true });
  await using dir = await migrationsDir({
    "001_a.sql": "create table a (id int);",
    "002_b.sql": "create table b (id int);",
  });
  await migrate(db.sql, { directory: dir.path });
  const before = await checksums(db.sql);

  await dir.write("002_b.sql", "create table b (id bigint);");
  await dir.write("003_c.sql", "create table c (id int);");
  const error = await migrate(db.sql, { directory: dir.path }).then(() => undefined, (e) => e);
  assert.ok(error instanceof MigrationChangedError);
  assert.equal(error.name, "MigrationChangedError");
  assert.equal(error.file, "002_b.sql");
  assert.equal(error.recorded, before["002_b.sql"]);
  assert.equal(error.actual, await sha256("create table b (id bigint);"));
  assert.match(
    error.message,
    /^Cannot migrate: applied migration "002_b\.sql" has changed since it was applied \(sha256 [0-9a-f]{12}\.\.\. recorded, [0-9a-f]{12}\.\.\. now\); restore/,
  );
  assert.equal(await tableExists(db.sql, "c"), false);
  assert.deepEqual(await checksums(db.sql), before);
});

Deno.test("a ledger from before checksums is upgraded in place: its rows adopt the files' current checksums", async () => {
  await using db = await freshDatabase({ empty: true });
  await db.sql.unsafe(`
    create schema sluice_migrations;
    create table sluice_migrations.applied (
      file text primary key,
      applied_at timestamptz not null default now()
    );
    insert into sluice_migrations.applied (file) values ('001_a.sql');
    create table a (id int);
  `);
  await using dir = await migrationsDir({
    "001_a.sql": "create table a (id int);",
    "002_b.sql": "create table b (id int);",
  });
  const result = await migrate(db.sql, { directory: dir.path });
  assert.deepEqual(result.applied, ["002_b.sql"]);
  assert.deepEqual(await checksums(db.sql), {
    "001_a.sql": await sha256("create table a (id int);"),
    "002_b.sql": await sha256("create table b (id int);"),
  });

  await dir.write("001_a.sql", "create table a (id bigint);");
  const error = await migrate(db.sql, { directory: dir.path }).then(() => undefined, (e) => e);
  assert.ok(error instanceof MigrationChangedError);
  assert.equal(error.file, "001_a.sql");
});

Deno.test("concurrent migrate() calls apply each migration exactly once", async () => {
  await using db = await freshDatabase({ empty: true });
  const files: Record<string, string> = { "000_log.sql": "create table log (file text);" };
  for (let i = 1; i <= 5; i++) {
    // The sleep widens the window in which the other migrator waits on the lock.
    files[`00${i}_step.sql`] = `insert into log values ('00${i}'); select pg_sleep(0.05);`;
  }
  await using dir = await migrationsDir(files);
  const one = db.connect(2);
  const two = db.connect(2);
  const results = await Promise.all([
    migrate(one, { directory: dir.path }),
    migrate(two, { directory: dir.path }),
  ]);

  // The winner installs PGMQ as this server allows (INSTALLS, above); the other finds it present.
  assert.deepEqual(results.map((r) => r.pgmq).sort(), [INSTALLS, "present"]);
  const applied = results.flatMap((r) => r.applied).sort();
  assert.deepEqual(applied, Object.keys(files).sort());
  const log = await db.sql`select file, count(*)::int as n from log group by file order by file`;
  assert.deepEqual([...log], ["001", "002", "003", "004", "005"].map((file) => ({ file, n: 1 })));
});

Deno.test("MIGRATION_FILES lists exactly the files of supabase/migrations, in order", async () => {
  assert.deepEqual([...MIGRATION_FILES], await shippedMigrations());
});

Deno.test("deno task db:migrate needs DATABASE_URL and reports what it applied", async () => {
  await using db = await freshDatabase({ empty: true });
  const cli = new URL("../../cli.ts", import.meta.url).pathname;
  // Outside any Supabase project: no installed copies to record for Supabase's runner.
  const cwd = await Deno.makeTempDir({ prefix: "sluice-migrate-cli-" });
  const run = async (env: Record<string, string>) => {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", cli, "migrate"],
      cwd,
      env,
      clearEnv: true,
    }).output();
    const decoder = new TextDecoder();
    return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
  };
  const home = { HOME: Deno.env.get("HOME") ?? "/", DENO_DIR: Deno.env.get("DENO_DIR") ?? "" };
  const env = Object.fromEntries(Object.entries(home).filter(([, v]) => v !== ""));

  const unset = await run(env);
  assert.equal(unset.code, 2);
  assert.match(unset.stderr, /^Cannot migrate: DATABASE_URL is not set; set it to the database/);

  const first = await run({ ...env, DATABASE_URL: db.url });
  assert.equal(first.code, 0, first.stderr);
  const files = await shippedMigrations();
  assert.equal(
    first.stdout,
    [
      // What it installed depends on the server (INSTALLS, above).
      INSTALLS === "extension"
        ? "pgmq: created extension pgmq"
        : "pgmq: extension not available on this server; installed sluice's PGMQ-compatible layer",
      ...files.map((file) => `applied ${file}`),
      `migrations: applied ${files.length}`,
      "",
    ].join("\n"),
  );

  const again = await run({ ...env, DATABASE_URL: db.url });
  assert.equal(again.stdout, "pgmq: already installed, left as is\nmigrations: up to date\n");
  await Deno.remove(cwd, { recursive: true });
});
