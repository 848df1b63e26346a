// The policy store's tables in the `pgwarden` schema, as versioned migrations (names start with `policy-`).
import type { Migration } from './schema-migrations.js';

/** The NOTIFY channel a commit signals on; its payload is `{"version":N,"epoch":"…"}`. */
export const POLICY_CHANNEL = 'pgwarden_policy';

/**
 * The store's migrations, oldest first. Tables: the current policy, one table per kind of object
 * (settings, users with SCRAM verifiers only, groups and members, roles, tenants, permissions, API
 * keys with verifiers, expiry, rotation and revocation), and `policy_versions`, the append-only
 * history (a trigger refuses UPDATE, DELETE and TRUNCATE with 42501). `ord` columns keep the
 * policy's order (role order is resolution order). Dates of API keys are kept as the text the policy
 * holds, so that export after import gives the same file.
 */
export const POLICY_MIGRATIONS: readonly Migration[] = [
  {
    name: 'policy-001-tables',
    sql: `
      CREATE TABLE pgwarden.policy_versions (
        version bigint PRIMARY KEY,
        epoch text NOT NULL,
        author text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        summary text NOT NULL DEFAULT '',
        changes jsonb NOT NULL DEFAULT '[]',
        policy jsonb NOT NULL
      );
      CREATE FUNCTION pgwarden.policy_versions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'pgwarden.policy_versions is append-only' USING ERRCODE = 'insufficient_privilege';
      END $$;
      CREATE TRIGGER policy_versions_append_only BEFORE UPDATE OR DELETE ON pgwarden.policy_versions
        FOR EACH ROW EXECUTE FUNCTION pgwarden.policy_versions_append_only();
      CREATE TRIGGER policy_versions_no_truncate BEFORE TRUNCATE ON pgwarden.policy_versions
        FOR EACH STATEMENT EXECUTE FUNCTION pgwarden.policy_versions_append_only();
      CREATE TABLE pgwarden.policy_settings (
        name text PRIMARY KEY,
        value jsonb NOT NULL
      );
      CREATE TABLE pgwarden.policy_users (
        name text PRIMARY KEY,
        ord int NOT NULL,
        scram text NOT NULL CHECK (scram LIKE 'SCRAM-SHA-256$%'),
        disabled boolean NOT NULL DEFAULT false
      );
      CREATE TABLE pgwarden.policy_groups (
        name text PRIMARY KEY,
        ord int NOT NULL
      );
      CREATE TABLE pgwarden.policy_group_members (
        group_name text NOT NULL REFERENCES pgwarden.policy_groups ON DELETE CASCADE,
        ord int NOT NULL,
        member text NOT NULL REFERENCES pgwarden.policy_users ON DELETE CASCADE,
        PRIMARY KEY (group_name, member)
      );
      CREATE TABLE pgwarden.policy_roles (
        name text PRIMARY KEY,
        ord int NOT NULL,
        description text
      );
      CREATE TABLE pgwarden.policy_tenants (
        role_name text NOT NULL REFERENCES pgwarden.policy_roles ON DELETE CASCADE,
        ord int NOT NULL,
        pattern text NOT NULL,
        PRIMARY KEY (role_name, ord)
      );
      CREATE TABLE pgwarden.policy_permissions (
        role_name text NOT NULL REFERENCES pgwarden.policy_roles ON DELETE CASCADE,
        ord int NOT NULL,
        effect text NOT NULL CHECK (effect IN ('allow', 'deny')),
        actions text[] NOT NULL,
        database_name text,
        schema_name text,
        table_name text,
        column_name text,
        PRIMARY KEY (role_name, ord)
      );
      CREATE TABLE pgwarden.policy_api_keys (
        id text PRIMARY KEY,
        ord int NOT NULL,
        scram text NOT NULL CHECK (scram LIKE 'SCRAM-SHA-256$%'),
        previous_scram text,
        previous_expires_at text,
        roles text[] NOT NULL,
        description text,
        created_at text,
        expires_at text,
        revoked boolean NOT NULL DEFAULT false
      );
    `,
  },
  {
    // jsonb reorders object keys, and the order of roles is part of the policy (resolution order):
    // the snapshot of each version keeps the text as written.
    name: 'policy-002-versions-policy-json',
    sql: 'ALTER TABLE pgwarden.policy_versions ALTER COLUMN policy TYPE json USING policy::json',
  },
  {
    // Issue 21: the live instances of a fleet, each holding a slot (encoded in the BackendKeyData
    // it issues) and the address other instances forward CancelRequests to. A row without a
    // heartbeat past expires_at is free for another instance.
    name: 'policy-003-fleet-instances',
    sql: `
      CREATE TABLE pgwarden.fleet_instances (
        slot int PRIMARY KEY CHECK (slot BETWEEN 1 AND 255),
        instance_id text NOT NULL UNIQUE,
        cancel_address text,
        host text NOT NULL,
        pid int NOT NULL,
        workers int NOT NULL DEFAULT 1,
        started_at timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );
    `,
  },
];
