-- sluice.live_workers, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE VIEW sluice.live_workers WITH (security_invoker='true') AS
 SELECT w.worker_id,
    w.function_name,
    w.queue_name,
    w.flow_slug,
    w.step_slug,
    w.flow_generation,
    w.started_at,
    w.last_heartbeat_at,
    w.deprecated_at,
    w.stopped_at
   FROM sluice.workers w
  WHERE ((w.stopped_at IS NULL) AND (w.last_heartbeat_at > (now() - sluice.worker_heartbeat_ttl())));
