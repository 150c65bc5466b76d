/**
 * The API contract as a test run observes it: every answer a service gave during a suite (the admin listener's
 * `http_requests_total` and `http_error_answers_total`) must be in its route's entry of the OpenAPI documents, the
 * status among the route's responses and, for an error, its code in the `code` enum of that response. The test
 * service runs this when it stops, so every suite that starts one checks the answers it provoked.
 */
import { type DocumentedResponse, enumCodes } from './openapi-codes.ts';

type Doc = { paths: Record<string, Record<string, { responses?: Record<string, DocumentedResponse> }>> };

/** Parses Prometheus text lines of `metric` into their label sets. */
function samples(text: string, metric: string): Array<Record<string, string>> {
  const out: Array<Record<string, string>> = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const labels: Record<string, string> = {};
    for (const m of line.slice(metric.length + 1, line.indexOf('}')).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[m[1]!] = m[2]!.replace(/\\(.)/g, '$1');
    }
    out.push(labels);
  }
  return out;
}

export async function contractViolations(svc: {
  url: string;
  adminUrl: string;
  adminToken: string;
}): Promise<string[]> {
  const auth = { authorization: `Bearer ${svc.adminToken}` };
  const scrape = await fetch(`${svc.adminUrl}/metrics`, { headers: auth });
  // A suite that limits the admin listener may have used up its minute: nothing to read, nothing checked.
  if (scrape.status !== 200) return [];
  const [metrics, publicDoc, adminDoc] = await Promise.all([
    scrape.text(),
    fetch(`${svc.url}/openapi.json`).then((r) => r.json() as Promise<Doc>),
    fetch(`${svc.adminUrl}/openapi.json`).then((r) => r.json() as Promise<Doc>),
  ]);
  const violations = new Set<string>();
  const entry = (method: string, route: string) => {
    const path = route.replace(/:(\w+)/g, '{$1}');
    const doc = route.startsWith('/admin/') ? adminDoc : publicDoc;
    const op = doc.paths[path]?.[(method === 'HEAD' ? 'GET' : method).toLowerCase()];
    return { path, op, documented: path in doc.paths || path in adminDoc.paths };
  };
  const answers = [
    ...samples(metrics, 'http_requests_total').filter((s) => Number(s['status']) < 400),
    ...samples(metrics, 'http_error_answers_total'),
  ];
  for (const s of answers) {
    const { method = '', route = '', status = '', code } = s;
    if (route === 'unmatched' || route === '/metrics' || route === '/openapi.json' || route.startsWith('/docs')) {
      continue;
    }
    const { op, documented } = entry(method, route);
    if (!documented) continue; // a route hidden from the documents (health, the documents themselves)
    const where = `${method} ${route} ${status}${code === undefined ? '' : ` ${code || '(no code)'}`}`;
    if (!op) {
      violations.add(`${where}: the method is not documented`);
      continue;
    }
    const response = op.responses?.[status];
    if (!response) violations.add(`${where}: status not among the route's responses`);
    else if (code !== undefined && !enumCodes(response)?.includes(code)) {
      violations.add(`${where}: code not listed for this status`);
    }
  }
  return [...violations].sort();
}
