import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { MIN_ADMIN_TOKEN_LENGTH } from './config.ts';

/**
 * The admin token: `ADMIN_TOKEN` when set, else `$DATA_DIR/admin-token`, generated at first start with
 * mode 0600 (32 random bytes, 43 characters). Either must be at least MIN_ADMIN_TOKEN_LENGTH characters.
 * Returns where it came from so the start-up line can say so (never the token itself).
 */
export function resolveAdminToken(dataDir: string, fromEnv?: string): { token: string; source: string } {
  if (fromEnv) {
    if (fromEnv.length < MIN_ADMIN_TOKEN_LENGTH) {
      throw new Error(`ADMIN_TOKEN must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters`);
    }
    return { token: fromEnv, source: 'ADMIN_TOKEN' };
  }
  const file = path.join(dataDir, 'admin-token');
  try {
    const token = fs.readFileSync(file, 'utf8').trim();
    if (token.length < MIN_ADMIN_TOKEN_LENGTH) {
      throw new Error(
        `${file} holds no usable token (under ${MIN_ADMIN_TOKEN_LENGTH} characters; delete it to generate a new one)`,
      );
    }
    return { token, source: file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  return { token, source: `${file} (generated)` };
}
