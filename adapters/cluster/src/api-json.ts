import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** A GET of the API server as JSON (the object as it was sent, no client model in between), with the kubeconfig's credentials. */
export function getJson(kubeConfig: KubeConfig, path: string): Promise<unknown> {
  return requestJson(kubeConfig, 'GET', path);
}

/**
 * A request to the API server with a JSON body (or none), answered with JSON: rejects with `code`
 * the status when it is not 2xx, or when no answer comes within 30 s.
 */
export async function requestJson(kubeConfig: KubeConfig, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const options: Parameters<typeof request>[1] = {
    method,
    headers: {
      accept: 'application/json',
      ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(payload.length) }),
    },
  };
  await kubeConfig.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299)
          return reject(Object.assign(new Error(`${method} ${url.pathname}: ${status} ${text.slice(0, 300)}`), { code: status }));
        try {
          resolve(JSON.parse(text));
        } catch (error) {
          reject(error);
        }
      });
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${url.pathname}: no answer within 30 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}
