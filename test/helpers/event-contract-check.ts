/**
 * The webhook events as a test run emits them: every event a suite's service wrote to its outbox (the bodies its
 * deliveries carry, byte for byte) must match the public OpenAPI document's `webhooks` entry of its type: the schema
 * of its request body (validated by Fastify's own JSON Schema validator, nothing coerced or removed), and no field that
 * the envelope or the event's `data` schema does not name. The test service runs this when it stops.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { envelopeBody } from '../../api/webhooks/sign-delivery.ts';

type Schema = { $ref?: string; allOf?: Schema[]; properties?: Record<string, Schema> };
export type EventsDoc = {
  webhooks?: Record<string, { post?: { requestBody?: { content?: Record<string, { schema?: Schema }> } } }>;
  components?: { schemas?: Record<string, Schema> };
};
export type StoredEvent = { id: string; type: string; createdAt: string; data: string };

const COMPONENT = '#/components/schemas/';

/** The properties a schema names, through `allOf` and component references. */
function named(schema: Schema | undefined, components: Record<string, Schema>): Schema['properties'] {
  if (!schema) return {};
  if (schema.$ref) return named(components[schema.$ref.slice(COMPONENT.length)], components);
  return Object.assign({}, schema.properties, ...(schema.allOf ?? []).map((s) => named(s, components)));
}

/** The problems of `events` against the document: an empty list when each is what its webhook entry documents. */
export async function documentedEventProblems(doc: EventsDoc, events: readonly StoredEvent[]): Promise<string[]> {
  const components = doc.components?.schemas ?? {};
  const app = Fastify({ ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true } } });
  // The components with references Ajv resolves: `#/components/schemas/X` becomes the schema id `X`.
  for (const [name, schema] of Object.entries(components)) {
    app.addSchema({ ...JSON.parse(JSON.stringify(schema).replaceAll(`"${COMPONENT}`, '"')), $id: name });
  }
  const bodies = new Map<string, Schema>();
  for (const [type, entry] of Object.entries(doc.webhooks ?? {})) {
    const schema = entry.post?.requestBody?.content?.['application/json']?.schema;
    if (!schema?.$ref) continue;
    bodies.set(type, schema);
    app.post(`/${type}`, { schema: { body: { $ref: schema.$ref.slice(COMPONENT.length) } } }, async () => ({}));
  }
  const problems = new Set<string>();
  try {
    for (const e of events) {
      const body = bodies.get(e.type);
      if (!body) {
        problems.add(`${e.type}: no webhooks entry with a payload schema`);
        continue;
      }
      const r = await app.inject({
        method: 'POST',
        url: `/${e.type}`,
        headers: { 'content-type': 'application/json' },
        payload: envelopeBody(e),
      });
      if (r.statusCode !== 200) problems.add(`${e.type}: ${(r.json() as { message?: string }).message ?? r.body}`);
      const properties = named(body, components) ?? {};
      const data = named(properties['data'], components) ?? {};
      for (const key of Object.keys(JSON.parse(e.data) as object)) {
        if (!(key in data)) problems.add(`${e.type}: data.${key} is not documented`);
      }
    }
  } finally {
    await app.close();
  }
  return [...problems].sort();
}

/** The problems of every event in the service's outbox against its public document. */
export async function eventViolations(svc: { url: string; dataDir: string }): Promise<string[]> {
  const file = path.join(svc.dataDir, 'service.db');
  if (!fs.existsSync(file)) return [];
  let events: StoredEvent[];
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      events = db.prepare('select id, type, data, created_at as createdAt from outbox order by seq').all() as never;
    } finally {
      db.close();
    }
  } catch {
    return []; // a suite that broke its database on purpose: nothing to read, nothing checked
  }
  if (events.length === 0) return [];
  const doc = (await (await fetch(`${svc.url}/openapi.json`)).json()) as EventsDoc;
  return documentedEventProblems(doc, events);
}
