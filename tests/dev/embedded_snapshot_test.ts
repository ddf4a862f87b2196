// The embedded database with sluice installed starts from a cached snapshot of a migrated one:
// the first start migrates and saves it, later ones load it (a copy each: nothing one writes
// shows in the next), in memory or into a new data directory.
import assert from "node:assert/strict";
import postgres from "postgres";
import { MIGRATION_FILES } from "../../src/migrations/migration_files.ts";
import { PGLITE_VERSION, startEmbeddedPostgres } from "../../src/embedded/embedded_postgres.ts";
import { migrate, MIGRATIONS_DIRECTORY } from "../../src/migrations/migrate.ts";
import { connect } from "../../src/db/connect.ts";
import { startEmbeddedSluice } from "../../src/embedded/embedded_sluice.ts";
import { readSnapshot, writeSnapshot } from "../../src/embedded/snapshot.ts";

async function rows(url: string, query: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return [...await sql.unsafe(query)];
  } finally {
    await sql.end();
  }
}

Deno.test("the embedded database migrates once, then starts from its snapshot", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-embedded-snapshot-" });
  const cacheDir = `${dir}/cache`;
  try {
    const progress: string[] = [];
    {
      await using db = await startEmbeddedSluice({ cacheDir, onProgress: (m) => progress.push(m) });
      assert.equal(db.startedFrom, "migrations");
      assert.match(progress[0], /applying sluice's migrations/);
      await rows(db.url, "create table sluice.only_in_the_first (v int)");
    }
    const [snapshot] = [...Deno.readDirSync(cacheDir)].map((entry) => entry.name);
    assert.match(snapshot, /^sluice-[0-9a-f]{16}-pglite-[\d.]+\.tar$/);
    progress.length = 0;
    for (const dataDir of [undefined, `${dir}/data`]) {
      await using db = await startEmbeddedSluice({
        cacheDir,
        dataDir,
        onProgress: (m) => progress.push(m),
      });
      assert.equal(db.startedFrom, "snapshot");
      assert.match(progress.at(-1)!, /loading the migrated embedded database/);
      const [{ applied }] = await rows(
        db.url,
        "select count(*)::int as applied from sluice_migrations.applied",
      );
      assert.ok(applied > 0, "no migrations recorded");
      assert.deepEqual(
        await rows(db.url, "select to_regclass('sluice.only_in_the_first')::text as t"),
        [{ t: null }],
      );
      await rows(db.url, "create table kept_here (v int)");
    }
    // The data directory loaded from the snapshot is a database of its own now.
    await using reopened = await startEmbeddedSluice({ cacheDir, dataDir: `${dir}/data` });
    assert.equal(reopened.startedFrom, "data directory");
    assert.deepEqual(await rows(reopened.url, "select to_regclass('kept_here')::text as t"), [
      { t: "kept_here" },
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const RACER = new URL("./_snapshot_racer.ts", import.meta.url).pathname;

/** Runs the racer script; its stdout lines once it exits 0. */
function racer(...args: string[]): { lines: AsyncIterable<string>; done: Promise<string[]> } {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", RACER, ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const first = Promise.withResolvers<void>();
  const stdout = (async () => {
    let rest = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop()!;
      lines.push(...parts);
      if (lines.length > 0) first.resolve();
    }
    first.resolve();
  })();
  const stderr = new Response(child.stderr).text();
  const done = (async () => {
    const [status] = await Promise.all([child.status, stdout]);
    assert.equal(status.code, 0, `racer ${args.join(" ")}: ${await stderr}`);
    return lines;
  })();
  return {
    lines: (async function* () {
      await first.promise;
      yield* lines;
    })(),
    done,
  };
}

/** A migrated snapshot in `dir/cache`, made once; its path. */
async function coldSnapshot(cacheDir: string): Promise<string> {
  await using db = await startEmbeddedSluice({ cacheDir });
  assert.equal(db.startedFrom, "migrations");
  return db.snapshot!;
}

Deno.test("the snapshot's name carries the PGlite version the bridge imports", async () => {
  const source = await Deno.readTextFile(
    new URL("../../src/embedded/embedded_postgres.ts", import.meta.url),
  );
  const imported = source.match(/"npm:@electric-sql\/pglite@([^"]+)"/)?.[1];
  assert.equal(imported, PGLITE_VERSION);
});

Deno.test("a damaged, unloadable or stale snapshot is set aside: the start migrates and saves a good one", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-embedded-snapshot-" });
  const cacheDir = `${dir}/cache`;
  try {
    const snapshot = await coldSnapshot(cacheDir);
    const good = await Deno.readFile(snapshot);
    assert.equal((await readSnapshot(snapshot)).state, "ok");
    // A stale snapshot: a database migrated before the newest migration existed.
    let stale: Blob;
    {
      const older = `${dir}/older-migrations`;
      await Deno.mkdir(older);
      for (const file of MIGRATION_FILES.slice(0, -1)) {
        await Deno.copyFile(new URL(file, MIGRATIONS_DIRECTORY), `${older}/${file}`);
      }
      await using db = await startEmbeddedPostgres();
      const sql = connect(db.url, { max: 1 });
      try {
        await migrate(sql, { directory: older });
      } finally {
        await sql.end();
      }
      stale = await db.dumpDataDir();
    }
    const cases: [string, () => Promise<void>, RegExp, boolean[]][] = [
      ["truncated", () => Deno.writeFile(snapshot, good.subarray(0, good.length / 2)), /damaged/, [
        false,
      ]],
      [
        "a flipped byte",
        async () => {
          const flipped = good.slice();
          flipped[flipped.length >> 1] ^= 0xff;
          await Deno.writeFile(snapshot, flipped);
        },
        /damaged \(its contents hash to/,
        [true],
      ],
      [
        "not a tarball",
        async () => {
          await writeSnapshot(snapshot, new Blob([new Uint8Array(64 * 1024).fill(7)]));
        },
        /damaged \(not a tarball\)/,
        [false],
      ],
      ["stale", () => writeSnapshot(snapshot, stale), /cannot be used/, [false, true]],
    ];
    for (const [name, damage, said, intoDataDir] of cases) {
      for (
        const dataDir of intoDataDir.map((into) =>
          into ? `${dir}/data-${name.replaceAll(" ", "-")}` : undefined
        )
      ) {
        await t.step(
          `${name}, ${dataDir === undefined ? "in memory" : "into a data directory"}`,
          async () => {
            await damage();
            const progress: string[] = [];
            {
              await using db = await startEmbeddedSluice({
                cacheDir,
                dataDir,
                onProgress: (m) => progress.push(m),
              });
              assert.equal(db.startedFrom, "migrations", progress.join("\n"));
              assert.ok(progress.some((m) => said.test(m)), progress.join("\n"));
              const [{ n }] = await rows(
                db.url,
                "select count(*)::int as n from sluice_migrations.applied",
              );
              assert.equal(n, MIGRATION_FILES.length);
            }
            assert.equal((await readSnapshot(snapshot)).state, "ok");
            await using again = await startEmbeddedSluice({ cacheDir });
            assert.equal(again.startedFrom, "snapshot");
          },
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a process reading the snapshot while another rewrites it never reads half of one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-embedded-snapshot-" });
  try {
    const source = await coldSnapshot(`${dir}/source`);
    const path = `${dir}/cache/${source.slice(source.lastIndexOf("/") + 1)}`;
    await Deno.mkdir(`${dir}/cache`);
    await Deno.copyFile(source, path);
    const reader = racer("read", path, `${dir}/stop`);
    // Rewrites start once the reader reads.
    for await (const line of reader.lines) assert.equal(line, "reading");
    await racer("write", path, source, "20").done;
    await Deno.writeTextFile(`${dir}/stop`, "");
    const { reads, damaged } = JSON.parse((await reader.done).at(-1)!);
    assert.ok(reads > 1, `only ${reads} reads`);
    assert.deepEqual(damaged, [], `${damaged.length} of ${reads} reads saw a partial file`);
    // Nothing but the snapshot is left behind.
    assert.deepEqual([...Deno.readDirSync(`${dir}/cache`)].map((e) => e.name), [
      path.slice(path.lastIndexOf("/") + 1),
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("two processes starting at once on an empty cache both start, and leave one good snapshot", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-embedded-snapshot-" });
  try {
    const cacheDir = `${dir}/cache`;
    const results = await Promise.all([racer("start", cacheDir), racer("start", cacheDir)].map(
      async (child) => JSON.parse((await child.done).at(-1)!),
    ));
    for (const result of results) assert.equal(result.migrations, MIGRATION_FILES.length);
    const files = [...Deno.readDirSync(cacheDir)].map((e) => e.name);
    assert.equal(files.length, 1, files.join(", "));
    assert.match(files[0], /\.tar$/);
    assert.equal((await readSnapshot(`${cacheDir}/${files[0]}`)).state, "ok");
    const third = JSON.parse((await racer("start", cacheDir).done).at(-1)!);
    assert.deepEqual(third, { startedFrom: "snapshot", migrations: MIGRATION_FILES.length });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
