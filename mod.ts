/**
 * sluice: a Postgres-native workflow engine for Supabase.
 *
 * @module
 */
