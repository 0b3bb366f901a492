import { request as httpsRequest } from 'node:https';
import type { CertificateAuthority, CertificatePair } from './certificates.js';

/** The API server and the admin's credentials. */
export interface AdminCredentials {
  readonly server: string;
  readonly ca: CertificateAuthority;
  readonly admin: CertificatePair;
}

/** A request to the API server as the admin: its status and body. */
export type AdminApi = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: string }>;

/** One request to the API server as the admin; a body is sent as a server-side apply patch on PATCH, JSON otherwise. */
export function adminRequest(
  context: AdminCredentials,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpsRequest(
      `${context.server}${path}`,
      {
        method,
        ca: context.ca.cert,
        cert: context.admin.cert,
        key: context.admin.key,
        timeout: 10_000,
        headers: {
          accept: 'application/json',
          ...(payload === undefined
            ? {}
            : {
                'content-type': method === 'PATCH' ? 'application/apply-patch+yaml' : 'application/json',
                'content-length': Buffer.byteLength(payload),
              }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Server-side apply as `fieldManager`: creates the object, or makes an existing one (a previous start's) this. */
export async function applyObject(api: AdminApi, path: string, object: unknown, fieldManager: string): Promise<void> {
  const answer = await api('PATCH', `${path}?fieldManager=${fieldManager}&force=true`, object);
  if (answer.status !== 200 && answer.status !== 201) throw new Error(`applying ${path}: ${answer.status} ${answer.body}`);
}
