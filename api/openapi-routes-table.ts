/**
 * The API guide's table of partner routes, written from the public OpenAPI document (`npm run docs:errors` writes it
 * with the error table): each route's method and path, what it does, the fields of its request (required ones in
 * bold), and its success status (for an operation marked `x-always-error`, the error every call answers instead).
 * test: api/error-catalogue.test.ts compares it with docs/api-guide.md.
 */
type Schema = { properties?: Record<string, unknown>; required?: string[]; anyOf?: Schema[] };
type Operation = {
  summary?: string;
  parameters?: Array<{ in: string; name: string; required?: boolean }>;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, unknown>;
  /** Every call answers this error (api/schemas/errors.ts alwaysError). */
  'x-always-error'?: { status: number; code: string };
};

function fields(op: Operation): string {
  const out: string[] = [];
  const query = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => `?${p.name}`);
  const body = op.requestBody?.content?.['application/json']?.schema;
  const required = new Set(body?.required ?? []);
  for (const name of Object.keys(body?.properties ?? {})) out.push(required.has(name) ? `**${name}**` : name);
  return [...out, ...query].join(', ') || '—';
}

export function renderRoutesTable(doc: { paths: Record<string, Record<string, Operation>> }): string {
  const rows: string[] = ['| route | what it does | request fields (**required**) | success |', '|---|---|---|---|'];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const ok = Object.keys(op.responses ?? {}).filter((s) => s.startsWith('2'));
      const always = op['x-always-error'];
      const success = always ? `none: always ${always.status} \`${always.code}\`` : ok.join(', ');
      rows.push(
        `| \`${method.toUpperCase()} ${path}\` | ${(op.summary ?? '').replace(/\|/g, '\\|')} | ${fields(op)} | ${success} |`,
      );
    }
  }
  return rows.join('\n');
}
