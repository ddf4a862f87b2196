// A client that stops half-way and waits to be killed: `deno run -A _dying_client.ts <url> <mode>`.
// It prints "ready" once it stands where `mode` says; the test then SIGKILLs it.
//   error-before-sync: a failed Parse, its ErrorResponse read, no Sync sent;
//   mid-extended: an insert into table `kept` parsed, bound and executed, no Sync sent;
//   in-transaction: `begin` and an insert into table `kept` committed to nothing.
import { bind, describe, execute, flush, parse, query, RawClient } from "./_raw_pg_client.ts";

const [url, mode] = Deno.args;
const client = await RawClient.connect(url);
if (mode === "error-before-sync") {
  await client.send(parse("select from no_such_table_anywhere"), describe(), flush());
  await client.readUntil("E");
} else if (mode === "mid-extended") {
  await client.send(parse("insert into kept values ('unsynced')"), bind(), execute(), flush());
  await client.readUntil("C");
} else if (mode === "in-transaction") {
  await client.send(query("begin; insert into kept values ('uncommitted')"));
  await client.readUntil("Z");
} else {
  throw new Error(`unknown mode ${mode}`);
}
console.log("ready");
// A pending timer keeps the process (and its socket) alive: an empty event loop would exit.
setInterval(() => {}, 1 << 30);
