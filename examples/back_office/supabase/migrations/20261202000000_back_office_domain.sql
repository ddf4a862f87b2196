-- The back-office domain: accounts and the records of the ten small jobs a SaaS back office runs
-- (welcome mail, invoices, webhooks, exports, thumbnails, password resets, trial reminders,
-- refunds, order confirmations, weekly digests). Every job writes through
-- supabase/functions/_shared/office.ts.
--
-- Invariants: one mail per (account, kind, dedupe key), so a retried send never mails twice; one
-- thumbnail per (image, width); one delivery row per (event, endpoint); an invoice moves
-- draft -> rendered -> sent, a refund requested -> approved | rejected, approved -> paid.

create table public.accounts (
  id integer generated always as identity primary key,
  email text not null unique,
  name text not null,
  plan text not null default 'trial' check (plan in ('trial', 'pro', 'cancelled')),
  trial_ends_at timestamptz,
  onboarding_step text,
  created_at timestamptz not null default clock_timestamp()
);

-- Every mail the fake mail provider accepted; `provider_id` is its message id.
create table public.emails (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  kind text not null,
  dedupe_key text not null default '',
  subject text not null,
  provider_id text not null,
  sent_at timestamptz not null default clock_timestamp(),
  unique (account_id, kind, dedupe_key)
);

-- Objects in storage (what Supabase Storage's bucket would hold), written by the fake uploader.
create table public.stored_objects (
  path text primary key,
  content_type text not null,
  bytes integer not null,
  checksum text not null,
  stored_at timestamptz not null default clock_timestamp()
);

create table public.invoices (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  amount_cents integer not null check (amount_cents > 0),
  status text not null default 'draft' check (status in ('draft', 'rendered', 'sent')),
  pdf_path text,
  sent_at timestamptz
);

create table public.webhook_endpoints (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  url text not null,
  active boolean not null default true
);

create table public.webhook_events (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  type text not null,
  payload jsonb not null,
  fanned_out_at timestamptz,
  delivered integer,
  failed integer
);

create table public.webhook_deliveries (
  event_id integer not null references public.webhook_events (id),
  endpoint_id integer not null references public.webhook_endpoints (id),
  status text not null check (status in ('delivered', 'failed')),
  attempts integer not null,
  response_code integer,
  primary key (event_id, endpoint_id)
);

create table public.exports (
  day date primary key,
  status text not null default 'collecting' check (status in ('collecting', 'uploaded')),
  row_count integer,
  object_path text
);

create table public.images (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  path text not null,
  width integer not null,
  height integer not null
);

create table public.thumbnails (
  image_id integer not null references public.images (id),
  width integer not null,
  height integer not null,
  object_path text not null,
  primary key (image_id, width)
);

-- A reset token is stored hashed; the mail carries the token itself.
create table public.password_resets (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  token_hash text not null,
  expires_at timestamptz not null,
  used_at timestamptz
);

create table public.orders (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  total_cents integer not null check (total_cents > 0),
  status text not null default 'placed' check (status in ('placed', 'confirmed')),
  placed_at timestamptz not null default clock_timestamp(),
  confirmed_at timestamptz
);

create table public.refunds (
  id integer generated always as identity primary key,
  order_id integer not null references public.orders (id),
  amount_cents integer not null check (amount_cents > 0),
  reason text not null,
  status text not null default 'requested'
    check (status in ('requested', 'approved', 'rejected', 'paid')),
  risk_score integer,
  payment_ref text,
  decided_at timestamptz
);

-- Something an account did, summarized by the weekly digest.
create table public.activity (
  id integer generated always as identity primary key,
  account_id integer not null references public.accounts (id),
  what text not null,
  at timestamptz not null default clock_timestamp()
);

create table public.digests (
  account_id integer not null references public.accounts (id),
  week date not null,
  item_count integer not null,
  email_id integer references public.emails (id),
  primary key (account_id, week)
);
