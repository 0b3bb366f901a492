import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** A GET of the API server as JSON (the object as it was sent, no client model in between), with the kubeconfig's credentials. */
export async function getJson(kubeConfig: KubeConfig, path: string): Promise<unknown> {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const options: Parameters<typeof request>[1] = { method: 'GET', headers: { accept: 'application/json' } };
  await kubeConfig.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200)
          return reject(Object.assign(new Error(`GET ${url.pathname}: ${res.statusCode} ${text.slice(0, 300)}`), { code: res.statusCode }));
        try {
          resolve(JSON.parse(text));
        } catch (error) {
          reject(error);
        }
      });
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`GET ${url.pathname}: no answer within 30 s`)));
    req.on('error', reject);
    req.end();
  });
}
