-- sluice.sender_covers, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Whether a signal's sender may complete a wait of the flow (its scope covers the flow). Security
-- definer: it reads the sender's grant.
CREATE OR REPLACE FUNCTION sluice.sender_covers(sender text, flow_slug text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select sluice.scope_covers(sluice.access_scope(sender_covers.sender::name),
    sender_covers.flow_slug)
$$;
