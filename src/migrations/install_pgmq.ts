/**
 * Makes PGMQ available in a database: the real `pgmq` extension wherever the server offers it,
 * sluice's PGMQ-compatible SQL layer otherwise, and nothing when either is already installed.
 *
 * @module
 */
import type { Sql, TransactionSql } from "../db/driver/postgres.ts";
import { lockSchemaChanges } from "./_lock.ts";
import { readText } from "./read_text.ts";

/**
 * How PGMQ was made available: `present` (already installed, left untouched), `extension`
 * (`create extension pgmq`), `compat` (sluice's PGMQ-compatible SQL).
 */
export type PgmqInstall = "present" | "extension" | "compat";

/** What a database offers, as {@linkcode detectPgmq} finds it. */
export interface PgmqState {
  /** Schema `pgmq` has a function `send`: the extension or the compat layer is installed. */
  present: boolean;
  /** `pg_available_extensions` lists `pgmq`. */
  available: boolean;
}

/**
 * Decides how to make PGMQ available. An existing install always wins (never install over the real
 * extension or a previous install); the real extension is preferred over the compat layer.
 *
 * @example
 * ```ts
 * import { choosePgmqInstall } from "./install_pgmq.ts";
 * console.log(choosePgmqInstall({ present: false, available: true })); // "extension"
 * ```
 */
export function choosePgmqInstall(state: PgmqState): PgmqInstall {
  if (state.present) return "present";
  return state.available ? "extension" : "compat";
}

/**
 * Looks at what the connected database offers.
 *
 * @example
 * ```ts ignore
 * import postgres from "postgres";
 * import { detectPgmq } from "./install_pgmq.ts";
 * const sql = postgres(Deno.env.get("DATABASE_URL")!, { prepare: false });
 * console.log(await detectPgmq(sql)); // { present: false, available: true }
 * ```
 */
export async function detectPgmq(sql: Sql | TransactionSql): Promise<PgmqState> {
  const [state] = await sql<PgmqState[]>`
    select
      exists (
        select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'pgmq' and p.proname = 'send'
      ) as present,
      exists (select 1 from pg_available_extensions where name = 'pgmq') as available
  `;
  return state;
}

/** Location of sluice's PGMQ-compatible SQL layer. */
export const PGMQ_COMPAT_SQL_URL: URL = new URL("./pgmq_compat.sql", import.meta.url);

/**
 * Makes PGMQ available in the connected database (see {@linkcode choosePgmqInstall}) in one
 * transaction, serialized with concurrent sluice migrators, and returns what it did.
 *
 * @example
 * ```ts ignore
 * import postgres from "postgres";
 * import { installPgmq } from "./install_pgmq.ts";
 * const sql = postgres(Deno.env.get("DATABASE_URL")!, { prepare: false });
 * console.log(await installPgmq(sql)); // "extension" on Supabase, "compat" on plain PostgreSQL
 * ```
 */
export async function installPgmq(sql: Sql): Promise<PgmqInstall> {
  return await sql.begin(async (tx) => {
    await lockSchemaChanges(tx);
    // Decide under the lock: a concurrent migrator may have installed PGMQ while we waited.
    const choice = choosePgmqInstall(await detectPgmq(tx));
    if (choice === "extension") await tx.unsafe("create extension pgmq");
    if (choice === "compat") {
      const text = await readText(PGMQ_COMPAT_SQL_URL);
      await tx.unsafe(text).catch((error) => {
        const detail = error instanceof Error ? error.message : String(error);
        throw new Error(
          `Cannot install the PGMQ compatibility layer "${PGMQ_COMPAT_SQL_URL.href}": ${detail}`,
          { cause: error },
        );
      });
    }
    return choice;
  });
}
