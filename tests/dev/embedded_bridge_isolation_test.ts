// The embedded bridge isolates its clients (#45 finding 4): a client process killed anywhere in
// the protocol (between an ErrorResponse and its Sync, between a Parse and its Execute, inside a
// transaction) leaves the one PGlite session usable for every other client, and a CancelRequest
// reaches the client it names.
import assert from "node:assert/strict";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../src/embedded/embedded_postgres.ts";
import {
  type BackendMessage,
  bind,
  errorText,
  execute,
  flush,
  parse,
  query,
  RawClient,
  sync,
} from "./_raw_pg_client.ts";
import { waitUntil, within } from "../_support.ts";

const DYING = new URL("./_dying_client.ts", import.meta.url).pathname;

/** Starts the dying client in `mode`, waits until it stands there, and SIGKILLs it. */
async function killMidProtocol(url: string, mode: string): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", DYING, url, mode],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the dying client (${mode}) ended early: ${out}${await stderr}`);
    out += value;
  }
  child.kill("SIGKILL");
  await reader.cancel();
  assert.equal((await child.status).signal, "SIGKILL");
  await stderr;
}

for (const mode of ["error-before-sync", "mid-extended", "in-transaction"]) {
  Deno.test(`a client killed ${mode} leaves the embedded database to the others`, async () => {
    await using pg = await startEmbeddedPostgres();
    // Opened before the kill: it shares the session with the dying client, as a worker's pool does.
    const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
    try {
      await sql`create table kept (v text)`;
      await killMidProtocol(pg.url, mode);
      // Extended protocol (named statements) and simple queries, from the old pool and a new one.
      await within(sql`insert into kept values (${"after"})`, `an insert after ${mode}`, 15_000);
      const fresh = postgres(pg.url, { max: 1, onnotice: () => {} });
      try {
        const rows = await within(
          fresh`select v from kept order by v`,
          `a new connection's select after ${mode}`,
          15_000,
        );
        // The dead client's open transaction was rolled back.
        assert.deepEqual(rows.map((row) => row.v), ["after"]);
        await within(fresh.unsafe("select 1; select 2"), "a simple query", 15_000);
      } finally {
        await fresh.end({ timeout: 1 });
      }
      const raw = await RawClient.connect(pg.url);
      try {
        await raw.send(query("select count(*) from kept"));
        const replies = await within(raw.readUntil("Z"), "a raw query", 15_000);
        const failed = replies.find((reply) => reply.type === "E");
        assert.equal(failed, undefined, failed && errorText(failed.body));
        // Idle, not in a (dead client's) transaction.
        assert.equal(String.fromCharCode(replies.at(-1)!.body[0]), "I");
      } finally {
        raw.close();
      }
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
}

/** Sends CancelRequests for `key` until `reply` settles; its messages. */
async function cancelUntilAnswered(
  url: string,
  key: { pid: number; secret: number },
  reply: Promise<BackendMessage[]>,
): Promise<BackendMessage[]> {
  let answered = false;
  const settled = reply.finally(() => answered = true);
  // The request may reach the bridge before the query it is meant for: then it finds nothing to
  // cancel, as in PostgreSQL, and the next one does.
  await waitUntil(async () => {
    if (!answered) await RawClient.cancel(url, key);
    return answered;
  }, "the cancelled wait's answer");
  return await settled;
}

Deno.test("a CancelRequest ends the wait of the connection it names, which works on", async () => {
  await using pg = await startEmbeddedPostgres();
  const holder = await RawClient.connect(pg.url);
  const simple = await RawClient.connect(pg.url);
  const extended = await RawClient.connect(pg.url);
  try {
    const keys = [holder, simple, extended].map((client) => JSON.stringify(client.backendKey));
    assert.equal(new Set(keys).size, 3, `each connection has its own key: ${keys}`);
    // The holder's open transaction keeps the session: the others wait for it.
    await holder.send(query("begin; select 1"));
    await holder.readUntil("Z");

    await simple.send(query("select 42"));
    const simpleReply = await cancelUntilAnswered(
      pg.url,
      simple.backendKey!,
      simple.readUntil("Z"),
    );
    assert.deepEqual(simpleReply.map((m) => m.type), ["E", "Z"]);
    assert.match(errorText(simpleReply[0].body), /^57014: canceling statement/);

    // An extended-protocol exchange cancelled before its Sync: the rest is skipped up to it.
    await extended.send(parse("select 43"), bind(), execute(), flush());
    const [failed] = await cancelUntilAnswered(
      pg.url,
      extended.backendKey!,
      extended.readUntil("E"),
    );
    assert.match(errorText(failed.body), /^57014/);
    await extended.send(bind(), execute(), sync());
    const synced = await within(extended.readUntil("Z"), "the Sync after a cancel", 15_000);
    assert.deepEqual(synced.map((m) => m.type), ["Z"]);

    // Once the holder commits, both run statements again.
    await holder.send(query("commit"));
    await holder.readUntil("Z");
    for (const client of [simple, extended]) {
      await client.send(query("select 44"));
      const replies = await within(client.readUntil("Z"), "a query after the cancel", 15_000);
      assert.deepEqual(replies.map((m) => m.type), ["T", "D", "C", "Z"]);
    }
  } finally {
    for (const client of [holder, simple, extended]) client.close();
  }
});
