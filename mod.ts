/**
 * sluice: a Postgres-native workflow engine for Supabase.
 *
 * @module
 */

export * from "./src/dsl/mod.ts";
export * from "./src/client/mod.ts";
export * from "./src/worker/mod.ts";
