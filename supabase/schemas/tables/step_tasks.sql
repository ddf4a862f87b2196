-- sluice.step_tasks, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.step_tasks (
    run_id uuid NOT NULL,
    step_slug text NOT NULL,
    task_index integer NOT NULL,
    flow_slug text NOT NULL,
    queue_name text NOT NULL,
    message_id bigint,
    input jsonb,
    status text DEFAULT 'queued'::text NOT NULL,
    attempts_count integer DEFAULT 0 NOT NULL,
    requeued_count integer DEFAULT 0 NOT NULL,
    last_worker_id uuid,
    error_message text,
    output jsonb,
    queued_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    completed_at timestamp with time zone,
    failed_at timestamp with time zone,
    skipped_at timestamp with time zone,
    cancelled_at timestamp with time zone,
    permanently_stalled_at timestamp with time zone,
    attempts_base integer DEFAULT 0 NOT NULL,
    concurrency_key text,
    priority integer DEFAULT 0 NOT NULL,
    CONSTRAINT step_tasks_attempts_base_check CHECK (((attempts_base >= 0) AND (attempts_base <= attempts_count))),
    CONSTRAINT step_tasks_attempts_count_check CHECK ((attempts_count >= 0)),
    CONSTRAINT step_tasks_check CHECK ((num_nonnulls(completed_at, failed_at, skipped_at, cancelled_at) <= 1)),
    CONSTRAINT step_tasks_check1 CHECK (((status = 'completed'::text) = (completed_at IS NOT NULL))),
    CONSTRAINT step_tasks_check2 CHECK (((status = 'failed'::text) = (failed_at IS NOT NULL))),
    CONSTRAINT step_tasks_check3 CHECK (((status = 'skipped'::text) = (skipped_at IS NOT NULL))),
    CONSTRAINT step_tasks_check4 CHECK (((status = 'cancelled'::text) = (cancelled_at IS NOT NULL))),
    CONSTRAINT step_tasks_check5 CHECK (((status <> 'started'::text) OR (started_at IS NOT NULL))),
    CONSTRAINT step_tasks_requeued_count_check CHECK ((requeued_count >= 0)),
    CONSTRAINT step_tasks_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'started'::text, 'completed'::text, 'failed'::text, 'skipped'::text, 'cancelled'::text]))),
    CONSTRAINT step_tasks_task_index_check CHECK ((task_index >= 0))
)
WITH (fillfactor='60');

COMMENT ON COLUMN sluice.step_tasks.priority IS 'Its run''s priority: a worker reads the queued tasks of higher priority first (sluice.read_prioritized).';

ALTER TABLE ONLY sluice.step_tasks
    ADD CONSTRAINT step_tasks_pkey PRIMARY KEY (run_id, step_slug, task_index);

CREATE INDEX step_tasks_held_idx ON sluice.step_tasks USING btree (flow_slug, step_slug, concurrency_key, queued_at, run_id, task_index) WHERE ((concurrency_key IS NOT NULL) AND (message_id IS NULL) AND (status = 'queued'::text));

CREATE UNIQUE INDEX step_tasks_message_key ON sluice.step_tasks USING btree (message_id, queue_name) WHERE (message_id IS NOT NULL);

CREATE INDEX step_tasks_prioritized_idx ON sluice.step_tasks USING btree (queue_name, priority DESC, message_id) WHERE ((status = 'queued'::text) AND (priority <> 0));

CREATE INDEX step_tasks_prioritized_message_idx ON sluice.step_tasks USING btree (message_id) WHERE ((status = 'queued'::text) AND (priority <> 0));

CREATE INDEX step_tasks_queued_idx ON sluice.step_tasks USING btree (flow_slug, step_slug) WHERE (status = 'queued'::text);

CREATE INDEX step_tasks_slots_idx ON sluice.step_tasks USING btree (flow_slug, step_slug, concurrency_key) WHERE ((concurrency_key IS NOT NULL) AND (message_id IS NOT NULL) AND (status = ANY (ARRAY['queued'::text, 'started'::text])));

CREATE INDEX step_tasks_started_idx ON sluice.step_tasks USING btree (started_at) WHERE ((status = 'started'::text) AND (started_at IS NOT NULL));

CREATE TRIGGER step_tasks_identity_immutable BEFORE UPDATE OF flow_slug, queue_name, message_id ON sluice.step_tasks FOR EACH ROW EXECUTE FUNCTION sluice.reject_task_identity_change();

CREATE TRIGGER step_tasks_note_changed AFTER UPDATE OF status ON sluice.step_tasks FOR EACH ROW WHEN (((old.concurrency_key IS NOT NULL) AND (old.status IS DISTINCT FROM new.status))) EXECUTE FUNCTION sluice.note_freed_slot();

CREATE TRIGGER step_tasks_note_held AFTER INSERT ON sluice.step_tasks FOR EACH ROW WHEN (((new.concurrency_key IS NOT NULL) AND (new.message_id IS NULL))) EXECUTE FUNCTION sluice.note_freed_slot();

CREATE CONSTRAINT TRIGGER step_tasks_release_changed AFTER UPDATE OF status ON sluice.step_tasks DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (((old.concurrency_key IS NOT NULL) AND (old.status IS DISTINCT FROM new.status))) EXECUTE FUNCTION sluice.release_noted_slots();

CREATE CONSTRAINT TRIGGER step_tasks_release_held AFTER INSERT ON sluice.step_tasks DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (((new.concurrency_key IS NOT NULL) AND (new.message_id IS NULL))) EXECUTE FUNCTION sluice.release_noted_slots();

ALTER TABLE ONLY sluice.step_tasks
    ADD CONSTRAINT step_tasks_run_id_step_slug_fkey FOREIGN KEY (run_id, step_slug) REFERENCES sluice.step_states(run_id, step_slug) ON DELETE CASCADE;

CREATE POLICY flow_access ON sluice.step_tasks USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), flow_slug)));

ALTER TABLE sluice.step_tasks ENABLE ROW LEVEL SECURITY;
