// Admin API: replay the audit log under a proposed policy, against the policy in force (workspace_roles and audit_read).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { policyOfConfig, validatePolicy, withPolicy } from '../policy/policy-document.js';
import { policyShape } from '../policy/policy-schema.js';
import { replayAudit } from '../policy/replay.js';
import { CatalogSource } from '../proxy/catalog-source.js';
import { loadParser } from '../sql/analyze.js';
import { majorOfServerVersion } from '../sql/parser.js';
import { HttpError } from './admin-http.js';
import { type AdminContext, need } from './policy-edit.js';
import { auditFileOf, readAuditLines } from './routes-workspace.js';

const replayBody = z
  .object({
    /**
     * The proposed change: roles, groups, default role or workspace admins, each replacing the field of
     * the policy in force (users and API keys, which hold verifiers, stay as they are).
     */
    policy: z
      .object({
        roles: policyShape.roles.optional(),
        groups: policyShape.groups.optional(),
        default_role: policyShape.default_role.optional(),
        workspace_admins: policyShape.workspace_admins.optional(),
      })
      .strict(),
    /** Audit lines to replay; absent: this instance's audit file. */
    audit: z.array(z.record(z.unknown())).max(100_000).optional(),
  })
  .strict();

/** Registers POST /api/replay. */
export function replayRoutes(app: FastifyInstance, ctx: AdminContext): void {
  const catalogs = new CatalogSource(60_000);
  app.post<{ Body: z.infer<typeof replayBody> }>(
    '/api/replay',
    {
      preHandler: need(ctx, 'workspace_roles', 'audit_read'),
      schema: {
        tags: ['check'],
        summary:
          'every verdict of the audit log that the proposed policy would change, against the policy in force',
        body: replayBody,
      },
    },
    async (req) => {
      const current = ctx.config().config;
      const proposed = withPolicy(
        current,
        validatePolicy({ ...policyOfConfig(current), ...req.body.policy }),
      );
      let lines = req.body.audit;
      if (lines === undefined) {
        const file = auditFileOf(ctx);
        if (file === undefined)
          throw new HttpError(
            404,
            'no-audit-file',
            'this instance writes its audit lines to its log; send them as "audit"',
          );
        lines = readAuditLines(file);
      }
      return replayAudit(lines, {
        current,
        proposed,
        catalog: async (database) => {
          const url = current.databases[database]?.url as string;
          const cat = await catalogs.get(database, url);
          await loadParser(majorOfServerVersion(cat.serverVersionNum));
          return cat;
        },
      });
    },
  );
}
