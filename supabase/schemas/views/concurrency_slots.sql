-- sluice.concurrency_slots, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE VIEW sluice.concurrency_slots WITH (security_invoker='true') AS
 WITH slots AS (
         SELECT t.flow_slug,
            t.step_slug,
            t.concurrency_key,
            (count(*))::integer AS slots_in_use,
            (count(*) FILTER (WHERE (t.status = 'started'::text)))::integer AS running
           FROM sluice.step_tasks t
          WHERE ((t.concurrency_key IS NOT NULL) AND (t.message_id IS NOT NULL) AND (t.status = ANY (ARRAY['queued'::text, 'started'::text])))
          GROUP BY t.flow_slug, t.step_slug, t.concurrency_key
        ), held AS (
         SELECT t.flow_slug,
            t.step_slug,
            t.concurrency_key,
            (count(*))::integer AS held,
            min(t.queued_at) AS oldest_held_at
           FROM sluice.step_tasks t
          WHERE ((t.concurrency_key IS NOT NULL) AND (t.message_id IS NULL) AND (t.status = 'queued'::text))
          GROUP BY t.flow_slug, t.step_slug, t.concurrency_key
        )
 SELECT k.flow_slug,
    k.step_slug,
    k.concurrency_key,
    s.opt_concurrency_limit AS concurrency_limit,
    COALESCE(sl.slots_in_use, 0) AS slots_in_use,
    COALESCE(sl.running, 0) AS running,
    COALESCE(h.held, 0) AS held,
    h.oldest_held_at,
    (EXTRACT(epoch FROM (now() - h.oldest_held_at)))::integer AS oldest_held_age_sec,
    s.opt_rate_limit AS rate_limit,
    s.opt_rate_period AS rate_period
   FROM (((( SELECT slots.flow_slug,
            slots.step_slug,
            slots.concurrency_key
           FROM slots
        UNION
         SELECT held.flow_slug,
            held.step_slug,
            held.concurrency_key
           FROM held) k
     JOIN sluice.steps s ON (((s.flow_slug = k.flow_slug) AND (s.step_slug = k.step_slug))))
     LEFT JOIN slots sl ON (((sl.flow_slug = k.flow_slug) AND (sl.step_slug = k.step_slug) AND (sl.concurrency_key = k.concurrency_key))))
     LEFT JOIN held h ON (((h.flow_slug = k.flow_slug) AND (h.step_slug = k.step_slug) AND (h.concurrency_key = k.concurrency_key))));

COMMENT ON VIEW sluice.concurrency_slots IS 'Per key of each concurrency-limited step with work: its limit, slots in use, running tasks, held tasks and the oldest held task''s wait.';
