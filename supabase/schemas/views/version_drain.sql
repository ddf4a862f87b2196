-- sluice.version_drain, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE VIEW sluice.version_drain WITH (security_invoker='true') AS
 WITH counts AS (
         SELECT f.flow_slug,
            COALESCE(( SELECT array_agg(a.alias ORDER BY a.alias) AS array_agg
                   FROM sluice.aliases a
                  WHERE ((a.flow_slug = f.flow_slug) AND (a.alias <> f.flow_slug))), '{}'::text[]) AS aliases,
            ( SELECT a.flow_slug
                   FROM sluice.aliases a
                  WHERE (a.alias = f.flow_slug)) AS self_alias_points_at,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.runs r
                  WHERE ((r.flow_slug = f.flow_slug) AND (r.status = 'started'::text))) AS active_runs,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.step_tasks t
                  WHERE ((t.flow_slug = f.flow_slug) AND (t.status = 'queued'::text))) AS queued_tasks,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.step_tasks t
                  WHERE ((t.flow_slug = f.flow_slug) AND (t.status = 'started'::text))) AS started_tasks,
            ( SELECT (count(*))::integer AS count
                   FROM sluice.live_workers w
                  WHERE (w.flow_slug = f.flow_slug)) AS live_workers
           FROM sluice.flows f
        )
 SELECT c.flow_slug,
    c.aliases,
    c.self_alias_points_at,
    c.active_runs,
    c.queued_tasks,
    c.started_tasks,
    c.live_workers,
    ((c.active_runs = 0) AND (c.queued_tasks = 0) AND (c.started_tasks = 0)) AS work_drained,
    ((c.active_runs = 0) AND (c.queued_tasks = 0) AND (c.started_tasks = 0) AND (c.live_workers = 0) AND (cardinality(c.aliases) = 0)) AS drained
   FROM counts c;
