// One side of a race on a snapshot file: `deno run -A _snapshot_racer.ts <mode> <path> ...`.
//   write <path> <source> <times>: rewrites <path> from the snapshot <source> <times> times;
//   read <path> <stop>: reads <path> until the file <stop> exists, printing "reading" after the
//     first read, then one JSON line, {reads, damaged: [reasons]} (a missing file counts as none);
//   start <cacheDir>: starts the embedded database with that cache, prints one JSON line,
//     {startedFrom, migrations} (its ledger's row count).
import postgres from "postgres";
import { startEmbeddedSluice } from "../../src/embedded/embedded_sluice.ts";
import { readSnapshot, writeSnapshot } from "../../src/embedded/snapshot.ts";

const [mode, ...args] = Deno.args;
if (mode === "write") {
  const [path, source, times] = args;
  const read = await readSnapshot(source);
  if (read.state !== "ok") throw new Error(`${source}: ${read.state}`);
  for (let i = 0; i < Number(times); i++) await writeSnapshot(path, read.dump);
} else if (mode === "read") {
  const [path, stop] = args;
  let reads = 0;
  const damaged: string[] = [];
  const stopped = async () => await Deno.stat(stop).then(() => true, () => false);
  while (!await stopped()) {
    const read = await readSnapshot(path);
    if (read.state === "missing") continue;
    if (reads++ === 0) console.log("reading");
    if (read.state === "damaged") damaged.push(read.reason);
  }
  console.log(JSON.stringify({ reads, damaged }));
} else if (mode === "start") {
  await using db = await startEmbeddedSluice({ cacheDir: args[0] });
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  const [{ n }] = await sql`select count(*)::int as n from sluice_migrations.applied`;
  await sql.end();
  console.log(JSON.stringify({ startedFrom: db.startedFrom, migrations: n }));
} else {
  throw new Error(`unknown mode ${mode}`);
}
