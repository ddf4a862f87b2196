// The embedded database with sluice installed starts from a cached snapshot of a migrated one:
// the first start migrates and saves it, later ones load it (a copy each: nothing one writes
// shows in the next), in memory or into a new data directory.
import assert from "node:assert/strict";
import postgres from "postgres";
import { startEmbeddedSluice } from "../../src/testing/embedded_sluice.ts";

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
