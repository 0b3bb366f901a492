import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler, type AgentApiOptions } from '../src/index.js';
import { FakeView } from './fake-view.js';

/** The agent's server on a free port behind `token`, serving a fake agent's API (its streams among them). */
export async function startStreamServer(
  token: string,
  options: AgentApiOptions = {},
): Promise<{ view: FakeView; url: string; source: ServerManifestSource }> {
  const view = new FakeView();
  const source = new ServerManifestSource({ port: 0, authToken: token });
  source.mount(agentApiHandler(view, options));
  await source.start(new RecordingSink());
  return { view, url: source.url, source };
}

/** The path of an exec of `cmd` in the fake pod's `nginx` container. */
export const execPath = (cmd: string[], query = 'stdout=1&stderr=1') =>
  `/exec/default/web/nginx?${cmd.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&${query}`;
