-- sluice.worker_function_drain, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE VIEW sluice.worker_function_drain WITH (security_invoker='true') AS
 WITH counts AS (
         SELECT f.function_name,
            f.enabled,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.live_workers w
                  WHERE (w.function_name = f.function_name)) AS live_workers,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.live_workers w
                  WHERE ((w.function_name = f.function_name) AND (w.deprecated_at IS NULL))) AS serving_workers,
            ( SELECT max(w.last_heartbeat_at) AS max
                   FROM sluice.workers w
                  WHERE ((w.function_name = f.function_name) AND (w.stopped_at IS NULL))) AS last_heartbeat_at,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.step_tasks t
                  WHERE ((t.status = 'started'::text) AND (t.started_at IS NOT NULL) AND (t.last_worker_id IN ( SELECT w.worker_id
                           FROM sluice.workers w
                          WHERE (w.function_name = f.function_name))))) AS started_tasks,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.step_tasks t
                  WHERE ((t.status = 'queued'::text) AND (EXISTS ( SELECT 1
                           FROM sluice.workers w
                          WHERE ((w.function_name = f.function_name) AND (w.queue_name = t.queue_name) AND (w.flow_slug = t.flow_slug) AND ((w.step_slug IS NULL) OR (w.step_slug = t.step_slug))))))) AS queued_tasks
           FROM sluice.worker_functions f
        )
 SELECT c.function_name,
    c.enabled,
    c.live_workers,
    c.serving_workers,
    c.last_heartbeat_at,
    c.started_tasks,
    c.queued_tasks,
    ((c.live_workers = 0) AND (c.started_tasks = 0)) AS drained
   FROM counts c;
