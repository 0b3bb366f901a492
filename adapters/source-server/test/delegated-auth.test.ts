import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { request } from 'node:https';
import { RecordingSink } from '@kubelet-ts/conformance';
import { TestCertificates, type CertificatePair } from '@kubelet-ts/testkit';
import {
  ServerManifestSource,
  agentApiHandler,
  nodeRequestAttributes,
  type AuthorizationDecision,
  type DelegatedAuth,
  type NodeRequestAttributes,
  type RequestUser,
  type ServerManifestSourceOptions,
} from '../src/index.js';
import { RecordingLogger } from './recording-logger.js';
import { FakeView } from './fake-view.js';

/**
 * Authentication and authorization delegated to a cluster (issue 44): the kubelet's mapping of
 * paths to `nodes/<subresource>`, bearer tokens reviewed, client certificates as users, every
 * request's access reviewed, the kubelet's 401 and 403, and what happens when the reviewer fails.
 */

describe('nodeRequestAttributes: the kubelet’s mapping of paths to nodes/<subresource>', () => {
  const subresources = (method: string, path: string) => nodeRequestAttributes(method, path, 'n1').map((a) => a.subresource);

  it.each([
    ['/stats/summary', ['stats']],
    ['/stats', ['stats']],
    ['/metrics', ['metrics']],
    ['/metrics/resource', ['metrics']],
    ['/metrics/probes', ['metrics']],
    ['/logs/syslog', ['log']],
    ['/pods', ['pods', 'proxy']],
    ['/runningpods/', ['pods', 'proxy']],
    ['/configz', ['configz', 'proxy']],
    ['/containerLogs/default/web/app', ['proxy']],
    ['/exec/default/web/app', ['proxy']],
    ['/portForward/default/web', ['proxy']],
    ['/sources', ['proxy']],
    // Not a subpath: a prefix of a name is not the path.
    ['/statsx', ['proxy']],
    ['/metricsfoo', ['proxy']],
  ])('%s is %j', (path, expected) => {
    expect(subresources('GET', path)).toEqual(expected);
  });

  it('takes the verb from the method, the node name and the path as given', () => {
    expect(nodeRequestAttributes('POST', '/exec/default/web/app', 'n1')).toEqual([
      { verb: 'create', resource: 'nodes', subresource: 'proxy', name: 'n1', path: '/exec/default/web/app' },
    ]);
    expect(nodeRequestAttributes('DELETE', '/container/web', 'n1')[0]!.verb).toBe('delete');
    expect(nodeRequestAttributes('PUT', '/x', 'n1')[0]!.verb).toBe('update');
    expect(nodeRequestAttributes('PATCH', '/x', 'n1')[0]!.verb).toBe('patch');
    expect(nodeRequestAttributes('HEAD', '/x', 'n1')[0]!.verb).toBe('');
  });
});

/** A reviewer that knows some tokens and allows some (user, subresource) pairs, and counts what it was asked. */
class FakeReviewer implements DelegatedAuth {
  readonly nodeName = 'n1';
  readonly tokensAsked: string[] = [];
  readonly asked: Array<{ user: RequestUser; attributes: NodeRequestAttributes }> = [];
  failTokens = false;
  failAccess = false;
  constructor(
    private readonly users: Record<string, RequestUser>,
    private readonly allowed: ReadonlyArray<readonly [user: string, subresource: string]>,
    readonly anonymous = false,
  ) {}
  async authenticateToken(token: string): Promise<RequestUser | undefined> {
    this.tokensAsked.push(token);
    if (this.failTokens) throw new Error('the API server cannot be reached');
    return this.users[token];
  }
  async authorize(user: RequestUser, attributes: NodeRequestAttributes): Promise<AuthorizationDecision> {
    this.asked.push({ user, attributes });
    if (this.failAccess) throw new Error('the API server cannot be reached');
    return { allowed: this.allowed.some(([u, s]) => u === user.name && s === attributes.subresource) };
  }
}

let certs: TestCertificates;
let apiServerClient: CertificatePair;
beforeAll(async () => {
  certs = await TestCertificates.create();
  apiServerClient = await certs.issue('apiserver-kubelet-client', {
    commonName: 'kube-apiserver-kubelet-client',
    organizations: ['system:masters'],
  });
});
afterAll(async () => {
  await certs.destroy();
});

function call(
  url: string,
  path: string,
  options: { client?: CertificatePair; token?: string; method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: options.method ?? 'GET',
        ca: certs.ca.cert,
        ...(options.client === undefined ? {} : { cert: options.client.cert, key: options.client.key }),
        headers: { ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }), ...options.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('a server whose callers are reviewed by the cluster', () => {
  let source: ServerManifestSource | undefined;
  let logger: RecordingLogger;
  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (delegated: DelegatedAuth, options: Partial<ServerManifestSourceOptions> = {}) => {
    logger = new RecordingLogger();
    source = new ServerManifestSource({
      port: 0,
      address: '0.0.0.0',
      tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile },
      delegated,
      logger,
      ...options,
    });
    source.mount(agentApiHandler(new FakeView()));
    await source.start(new RecordingSink());
    return source.url.replace('0.0.0.0', '127.0.0.1');
  };

  const alice: RequestUser = { name: 'alice', groups: ['dev'] };
  const bob: RequestUser = { name: 'bob', groups: [] };

  it('a token the review names is that user; a token it does not is a 401, and so is no credential', async () => {
    const reviewer = new FakeReviewer({ 'alice-token': alice }, [['alice', 'proxy']]);
    const url = await start(reviewer);
    expect((await call(url, '/sources', { token: 'alice-token' })).status).toBe(200);
    expect(reviewer.asked.at(-1)).toEqual({
      user: alice,
      attributes: { verb: 'get', resource: 'nodes', subresource: 'proxy', name: 'n1', path: '/sources' },
    });
    const stranger = await call(url, '/sources', { token: 'who-knows' });
    expect(stranger.status).toBe(401);
    expect(JSON.parse(stranger.body).error).toMatch(/^Unauthorized/);
    expect((await call(url, '/sources')).status).toBe(401);
    // /healthz needs nothing, as before.
    expect((await call(url, '/healthz')).status).toBe(200);
  });

  it('an authenticated user without the subresource is a 403 naming user, verb and subresources', async () => {
    const reviewer = new FakeReviewer({ 'bob-token': bob }, [['bob', 'stats']]);
    const url = await start(reviewer);
    const refused = await call(url, '/pods', { token: 'bob-token' });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).error).toBe('Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])');
    expect((await call(url, '/stats/summary', { token: 'bob-token' })).status).toBe(200);
    const post = await call(url, '/container/web', { token: 'bob-token', method: 'DELETE' });
    expect(post.status).toBe(403);
    expect(JSON.parse(post.body).error).toContain('verb=delete');
  });

  it('fine-grained: nodes/pods allows /pods without nodes/proxy; nodes/proxy allows it too', async () => {
    const reviewer = new FakeReviewer({ 'a-token': alice, 'b-token': bob }, [
      ['alice', 'pods'],
      ['bob', 'proxy'],
    ]);
    const url = await start(reviewer);
    expect((await call(url, '/pods', { token: 'a-token' })).status).toBe(200);
    expect((await call(url, '/pods', { token: 'b-token' })).status).toBe(200);
    expect((await call(url, '/sources', { token: 'a-token' })).status).toBe(403);
  });

  it('a client certificate is the user its CN names, in the groups its O names; and is reviewed too', async () => {
    const reviewer = new FakeReviewer({}, [['kube-apiserver-kubelet-client', 'proxy']]);
    const url = await start(reviewer);
    expect((await call(url, '/sources', { client: apiServerClient })).status).toBe(200);
    expect(reviewer.asked.at(-1)!.user).toEqual({
      name: 'kube-apiserver-kubelet-client',
      groups: ['system:masters', 'system:authenticated'],
    });
    // The test CA's other client (CN=client) has no right here.
    expect((await call(url, '/sources', { client: certs.client })).status).toBe(403);
    expect(reviewer.tokensAsked).toEqual([]);
  });

  it('a reviewer that cannot be reached: the token is a 401 (said at warn), the access a 500, never a pass', async () => {
    const reviewer = new FakeReviewer({ 'alice-token': alice }, [['alice', 'proxy']]);
    const url = await start(reviewer);
    reviewer.failTokens = true;
    expect((await call(url, '/sources', { token: 'alice-token' })).status).toBe(401);
    expect(logger.at('warn').some((l) => l.message.includes('cannot review a bearer token'))).toBe(true);
    reviewer.failTokens = false;
    reviewer.failAccess = true;
    const failed = await call(url, '/sources', { token: 'alice-token' });
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.body).error).toBe('Authorization error (user=alice, verb=get, resource=nodes, subresource=proxy)');
  });

  it('anonymous on: no credential is system:anonymous, reviewed like anyone; a bad token is still a 401', async () => {
    const reviewer = new FakeReviewer({}, [['system:anonymous', 'metrics']], true);
    const url = await start(reviewer);
    expect((await call(url, '/metrics/resource')).status).toBe(200);
    expect(reviewer.asked.at(-1)!.user).toEqual({ name: 'system:anonymous', groups: ['system:unauthenticated'] });
    expect((await call(url, '/sources')).status).toBe(403);
    expect((await call(url, '/sources', { token: 'nonsense' })).status).toBe(401);
  });

  it("the agent's own token is a user of its own, reviewed as any", async () => {
    const reviewer = new FakeReviewer({}, [['kubelet-ts:auth-token', 'proxy']]);
    const url = await start(reviewer, { authToken: 'static-token-of-the-agent' });
    expect((await call(url, '/sources', { token: 'static-token-of-the-agent' })).status).toBe(200);
    expect(reviewer.tokensAsked).toEqual([]);
    expect(reviewer.asked.at(-1)!.user.name).toBe('kubelet-ts:auth-token');
  });

  it('checkHost false (a node of a cluster): the Host the API server passes on is taken; a foreign Origin is not', async () => {
    const reviewer = new FakeReviewer({ 'alice-token': alice }, [['alice', 'proxy']]);
    const forwarded = { host: '127.0.0.1:6443' };
    const checked = await start(reviewer);
    expect((await call(checked, '/sources', { token: 'alice-token', headers: forwarded })).status).toBe(403);
    await source?.close();
    const url = await start(reviewer, { checkHost: false });
    expect((await call(url, '/sources', { token: 'alice-token', headers: forwarded })).status).toBe(200);
    const crossSite = await call(url, '/sources', { token: 'alice-token', headers: { ...forwarded, origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(JSON.parse(crossSite.body).error).toMatch(/^Origin "https:\/\/evil\.example" is not this agent's own/);
  });

  it('a non-loopback address is guarded by reviews; anonymous without access reviews is not', () => {
    const tls = { certFile: certs.server.certFile, keyFile: certs.server.keyFile };
    const tokensOnly: DelegatedAuth = { nodeName: 'n1', authenticateToken: async () => undefined };
    expect(() => new ServerManifestSource({ address: '0.0.0.0', tls, delegated: tokensOnly })).not.toThrow();
    expect(() => new ServerManifestSource({ address: '0.0.0.0', tls, delegated: { ...tokensOnly, anonymous: true } })).toThrow(
      /not loopback/,
    );
  });
});
