/**
 * Creates a project and an API key through the admin API of a running service; returns the key's secret.
 * `admin` is the admin listener's base URL (`http://127.0.0.1:<ADMIN_PORT>`), or anything carrying it as
 * `adminUrl` (a TestService).
 */
export async function createPartnerKey(
  admin: string | { adminUrl: string },
  adminToken: string,
  project: { name?: string; plan: string; rateLimitPerMinute?: number },
  environment: 'development' | 'production' = 'production',
): Promise<{ projectId: string; keyId: string; secretKey: string }> {
  const url = typeof admin === 'string' ? admin : admin.adminUrl;
  const headers = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
  const p = await fetch(`${url}/admin/v1/projects`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'partner', ...project }),
  });
  if (p.status !== 201) throw new Error(`project create answered ${p.status}: ${await p.text()}`);
  const { id } = (await p.json()) as { id: string };
  const k = await fetch(`${url}/admin/v1/projects/${id}/api-keys`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ environment }),
  });
  if (k.status !== 201) throw new Error(`key create answered ${k.status}: ${await k.text()}`);
  const key = (await k.json()) as { id: string; secretKey: string };
  return { projectId: id, keyId: key.id, secretKey: key.secretKey };
}
