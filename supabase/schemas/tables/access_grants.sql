-- sluice.access_grants, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.access_grants (
    role_oid oid NOT NULL,
    flows text[],
    granted_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT access_grants_flows_check CHECK (((flows IS NULL) OR (cardinality(flows) >= 1)))
);

COMMENT ON TABLE sluice.access_grants IS 'The flows each role granted sluice access may reach (null: every flow), as flow slugs or slug prefixes ending in *; written only by grant_access.';

ALTER TABLE ONLY sluice.access_grants
    ADD CONSTRAINT access_grants_pkey PRIMARY KEY (role_oid);

ALTER TABLE sluice.access_grants ENABLE ROW LEVEL SECURITY;
