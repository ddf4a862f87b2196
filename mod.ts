/**
 * sluice: a Postgres-native workflow engine for Supabase.
 *
 * @module
 */

export * from "./src/dsl/mod.ts";
