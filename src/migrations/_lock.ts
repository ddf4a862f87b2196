import type { TransactionSql } from "../db/driver/postgres.ts";

/**
 * Takes the transaction-level advisory lock that serializes sluice's schema changes (PGMQ layer
 * install, migrations) across concurrent migrators. Transaction-level rather than session-level so
 * that it also works through a transaction-mode pooler such as Supabase's; the key is arbitrary but
 * fixed.
 */
export async function lockSchemaChanges(tx: TransactionSql): Promise<void> {
  await tx.unsafe("select pg_advisory_xact_lock(7413553260911034)");
}
