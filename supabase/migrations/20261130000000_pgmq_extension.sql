-- sluice's first migration: make sure PGMQ >= 1.5 is installed.
--
-- On Supabase (and any server that ships the extension) this creates extension pgmq. Under
-- `deno task sluice migrate` on plain PostgreSQL the runner has already installed sluice's
-- PGMQ-compatible layer before any migration runs, so schema pgmq exists and nothing is created.
-- Either way the engine needs the message headers column that PGMQ 1.5 introduced.
do $$
begin
  if not exists (select 1 from pg_namespace where nspname = 'pgmq') then
    if exists (select 1 from pg_available_extensions where name = 'pgmq') then
      create extension pgmq;
    else
      raise exception 'sluice requires PGMQ, but the pgmq extension is neither installed nor available on this server; install PGMQ >= 1.5 on the server, or apply the migrations with "deno task sluice migrate", which installs sluice''s PGMQ-compatible layer first';
    end if;
  end if;

  if not exists (
    select 1
    from pg_type t
    join pg_namespace n on n.oid = t.typnamespace
    join pg_attribute a on a.attrelid = t.typrelid
    where n.nspname = 'pgmq'
      and t.typname = 'message_record'
      and a.attname = 'headers'
      and not a.attisdropped
  ) then
    raise exception 'sluice requires PGMQ >= 1.5 (pgmq.message_record has no headers attribute); upgrade the pgmq extension';
  end if;
end
$$;
