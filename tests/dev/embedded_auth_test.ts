// The embedded database is the starting user's alone (#43 finding 6): every connection proves it
// knows a password generated at start (SCRAM-SHA-256, what postgres.js and libpq speak), and a
// data directory is owner-only.
import assert from "node:assert/strict";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../src/embedded/embedded_postgres.ts";

/** The SQLSTATE a connection to `url` fails with, or `null` when it connects and queries. */
async function connectError(url: string): Promise<string | null> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 30 });
  try {
    await sql`select 1`;
    return null;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

Deno.test("the embedded database admits only connections that know its generated password", async () => {
  await using pg = await startEmbeddedPostgres();
  await using other = await startEmbeddedPostgres();
  assert.match(pg.password, /^[A-Za-z0-9_-]{32}$/);
  assert.notEqual(pg.password, other.password);
  const url = new URL(pg.url);
  assert.equal(decodeURIComponent(url.password), pg.password);

  // postgres.js with the URL's password: SCRAM-SHA-256, as against a server.
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    assert.deepEqual([...await sql`select current_user as u`], [{ u: "postgres" }]);
  } finally {
    await sql.end();
  }
  for (
    const [what, password] of [["a wrong password", "wrong"], ["another start's", other.password]]
  ) {
    const wrong = new URL(pg.url);
    wrong.password = password;
    assert.equal(await connectError(wrong.href), "28P01", what);
  }
  const none = new URL(pg.url);
  none.password = "";
  assert.equal(await connectError(none.href), "28P01", "no password");
  // Another user name with no password gets nowhere either.
  none.username = "nobody";
  assert.equal(await connectError(none.href), "28P01", "user nobody");
});

Deno.test("a chosen password keeps the URL, and a data directory is made owner-only", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-embedded-auth-" });
  try {
    const dataDir = `${dir}/data`;
    // A directory someone made world-readable, as the bridge used to leave it.
    await Deno.mkdir(dataDir, { mode: 0o755 });
    await Deno.chmod(dataDir, 0o755);
    {
      await using pg = await startEmbeddedPostgres({ dataDir, password: "kept secret" });
      assert.equal(decodeURIComponent(new URL(pg.url).password), "kept secret");
      assert.equal(await connectError(pg.url), null);
      assert.equal((await Deno.stat(dataDir)).mode! & 0o777, 0o700);
    }
    await assert.rejects(startEmbeddedPostgres({ password: "" }), /the password is empty/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
