import type { FieldError } from '@kubelet-ts/core';
import { sourceFuzzContract } from '@kubelet-ts/conformance';
import { ServerManifestSource } from '../src/index.js';

/**
 * Real HTTP requests to the agent's server: each input is a `POST /container`, the sentinel was
 * the first one, and what an input added is deleted again after it (`DELETE /container/<id>`), so
 * the set stays small over 10,000 inputs.
 */
sourceFuzzContract(
  'server',
  () => {
    const source = new ServerManifestSource({ port: 0 });
    return {
      kind: 'request',
      start: (sink) => source.start(sink),
      async send(bytes) {
        let res: Response;
        try {
          res = await fetch(`${source.url}/container`, { method: 'POST', body: bytes, headers: { 'content-type': 'application/yaml' } });
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
