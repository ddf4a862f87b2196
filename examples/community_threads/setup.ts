/**
 * `deno task db:setup`: prepares the database at `DATABASE_URL` for the community-threads
 * project: sluice's own migrations (PGMQ included), then this project's `supabase/migrations/`.
 *
 * Swapping to the package CLI is one line: `installSluice` becomes the CLI's `install` (which
 * puts sluice's migrations into `supabase/migrations/`, so the second step applies them with the
 * project's own).
 *
 * @module
 */

import postgres, { type Sql } from "postgres";
import { migrate } from "../../src/migrations/migrate.ts";

/** This project's migrations. */
export const PROJECT_MIGRATIONS: URL = new URL(
  "./supabase/migrations/",
  import.meta.url,
);

/** Installs sluice's schema and PGMQ: the package's migrations, as of this repository. */
const installSluice = (sql: Sql) => migrate(sql);

/** Applies sluice's migrations, then the project's; returns the files applied by this call. */
export async function setupDatabase(sql: Sql): Promise<string[]> {
  const sluice = await installSluice(sql);
  const project = await migrate(sql, { directory: PROJECT_MIGRATIONS });
  return [...sluice.applied, ...project.applied];
}

if (import.meta.main) {
  const url = Deno.env.get("DATABASE_URL");
  if (url === undefined || url === "") {
    console.error("Cannot set up the database: DATABASE_URL is not set");
    Deno.exit(2);
  }
  const sql = postgres(url, { prepare: false, max: 1, onnotice: () => {} });
  try {
    const applied = await setupDatabase(sql);
    for (const file of applied) console.log(`applied ${file}`);
    console.log(
      applied.length === 0 ? "up to date" : `applied ${applied.length} migrations`,
    );
  } finally {
    await sql.end();
  }
}
