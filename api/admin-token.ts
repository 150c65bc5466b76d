import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The admin token: `ADMIN_TOKEN` when set, else `$DATA_DIR/admin-token`, generated at first start with
 * mode 0600. Returns where it came from so the start-up line can say so (never the token itself).
 */
export function resolveAdminToken(dataDir: string, fromEnv?: string): { token: string; source: string } {
  if (fromEnv) return { token: fromEnv, source: 'ADMIN_TOKEN' };
  const file = path.join(dataDir, 'admin-token');
  try {
    const token = fs.readFileSync(file, 'utf8').trim();
    if (token.length < 16) throw new Error(`${file} holds no usable token (delete it to generate a new one)`);
    return { token, source: file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  return { token, source: `${file} (generated)` };
}
