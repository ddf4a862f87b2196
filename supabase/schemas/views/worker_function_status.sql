-- sluice.worker_function_status, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE VIEW sluice.worker_function_status WITH (security_invoker='true') AS
 SELECT f.function_name,
    f.enabled,
    (f.restart_paused_at IS NOT NULL) AS restart_paused,
    f.restart_paused_at,
    f.pause_reason,
    f.last_invoked_at,
    ( SELECT (count(*))::integer AS count
           FROM sluice.live_workers w
          WHERE (w.function_name = f.function_name)) AS live_workers
   FROM sluice.worker_functions f;
