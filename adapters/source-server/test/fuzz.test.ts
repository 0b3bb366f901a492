import type { FieldError } from '@kubelet-ts/core';
import { sourceFuzzContract } from '@kubelet-ts/conformance';
import { ServerManifestSource } from '../src/index.js';
import { send } from './http-request.js';

/** Each input, before it is really sent, is also sent as a page in a browser could send it. */
const CROSS_SITE: ReadonlyArray<(port: number) => Record<string, string>> = [
  () => ({ origin: 'http://evil.example', 'content-type': 'text/plain' }), // a form on another site
  (port) => ({ host: `rebound.example:${port}`, 'content-type': 'application/yaml' }), // DNS rebinding
  () => ({ 'content-type': 'application/x-www-form-urlencoded' }), // curl's default type
];
/** The types a manifest may be sent as, taken in turn. */
const ACCEPTED = ['application/yaml', 'application/json; charset=utf-8', 'text/x-yaml'];

/**
 * Real HTTP requests to the agent's server: each input is a `POST /container`, the sentinel was
 * the first one, and what an input added is deleted again after it (`DELETE /container/<id>`), so
 * the set stays small over 10,000 inputs. Each input is first sent cross-site, which must be
 * refused (403/415) whatever the bytes: the contract then sees one update at most, from the real one.
 */
sourceFuzzContract(
  'server',
  () => {
    const source = new ServerManifestSource({ port: 0 });
    let sent = 0;
    return {
      kind: 'request',
      start: (sink) => source.start(sink),
      async send(bytes) {
        const turn = sent++;
        const port = Number(new URL(source.url).port);
        // A body over the limit may see its connection dropped before the answer: refused too.
        const forged = await send(source.url, '/container', {
          method: 'POST',
          headers: CROSS_SITE[turn % CROSS_SITE.length]!(port),
          body: bytes,
        }).catch(() => undefined);
        if (forged !== undefined && forged.status !== 403 && forged.status !== 415)
          throw new Error(`a cross-site POST /container answered ${forged.status}`);
        let res: Response;
        try {
          res = await fetch(`${source.url}/container`, {
            method: 'POST',
            body: bytes,
            headers: { 'content-type': ACCEPTED[turn % ACCEPTED.length]! },
          });
        } catch {
          // A body over the limit is answered 413 and the connection dropped, which fetch may
          // see before the answer: refused either way.
          return { ok: false, fieldErrors: [] };
        }
        const answer = (await res.json()) as { fieldErrors?: FieldError[] };
        if (res.status >= 500) throw new Error(`POST /container answered ${res.status}: ${JSON.stringify(answer)}`);
        return { ok: res.ok, fieldErrors: answer.fieldErrors ?? [] };
      },
      async withdraw(id) {
        const res = await fetch(`${source.url}/container/${encodeURIComponent(id)}`, { method: 'DELETE' });
        if (!res.ok) throw new Error(`DELETE /container/${id} answered ${res.status}`);
      },
      close: () => source.close(),
    };
  },
  { runs: { short: 500, long: 10_000 } },
);
