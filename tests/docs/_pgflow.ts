// pgflow 0.14.1 (/work/shared/pgflow-0.14.1, its unchanged SQL) loaded into a test database
// beside sluice, as a project that moves from pgflow to sluice has both for a while: its README
// says how (the Supabase-only objects stubbed, three CREATE EXTENSION lines skipped).
import type { Sql } from "postgres";

/** Where the pgflow SQL is kept. */
export const PGFLOW_DIR = "/work/shared/pgflow-0.14.1";

/** The lines pgflow's README says to skip: the extensions exist, or are stubbed. */
const SKIPPED = [
  'CREATE EXTENSION IF NOT EXISTS "pgmq" WITH SCHEMA "pgmq";',
  'CREATE EXTENSION IF NOT EXISTS "pg_net" WITH SCHEMA "public";',
  'CREATE EXTENSION IF NOT EXISTS "pg_cron";',
];

/** Whether the pgflow SQL is on this machine. */
export function pgflowAvailable(): boolean {
  try {
    return Deno.statSync(`${PGFLOW_DIR}/migrations`).isDirectory;
  } catch {
    return false;
  }
}

/** Loads pgflow's stubs and migrations, in filename order, into the database of `sql`. */
export async function loadPgflow(sql: Sql): Promise<void> {
  await sql.unsafe(await Deno.readTextFile(`${PGFLOW_DIR}/stubs.sql`));
  const files = [...Deno.readDirSync(`${PGFLOW_DIR}/migrations`)].map((entry) => entry.name)
    .filter((name) => name.endsWith(".sql")).sort();
  for (const file of files) {
    const text = await Deno.readTextFile(`${PGFLOW_DIR}/migrations/${file}`);
    const lines = text.split("\n").map((line) => SKIPPED.includes(line.trim()) ? "" : line);
    await sql.unsafe(lines.join("\n"));
  }
}
