import { createHash } from 'node:crypto';
import { Agent as HttpsAgent, type AgentOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** A holder's claim on the pool of a `KubeConfig` (see `poolConnections`). */
export interface PooledConnections {
  /** Lets go of the pool; the last holder's release closes its connections. */
  release(): void;
  /** How many TLS connections the pool has opened so far (for the node's figures and tests). */
  readonly opened: number;
}

interface Pool {
  holders: number;
  opened: number;
  /** One agent per lane and set of TLS credentials (a rotated client certificate is a new set), oldest first. */
  readonly agents: Map<string, HttpsAgent>;
  readonly restore: () => void;
}

const pools = new WeakMap<KubeConfig, Pool>();

/**
 * At most this many agents are kept (two lanes, for a client certificate rotated a few times): the
 * oldest one's connections are closed past it.
 */
const MAX_AGENTS = 6;

/**
 * Keep-alive connections for every API client made from `kubeConfig` (`makeApiClient`), shared by
 * everything that holds the same `KubeConfig`: the Node, its Lease, the status writer, events, and
 * with `kubelet-ts hollow` every node of the process. client-node makes a new agent, and so a new
 * TCP and TLS connection, for each request; client-go keeps one pool per client. Each request
 * still gets the credentials client-node gives it (read from the kubeconfig at that moment); the
 * agent is the pool's for those credentials, so a rotated certificate gets connections of its own;
 * Lease renewals have their own (`LEASES`), so no backlog of other requests delays a heartbeat.
 * Behind a proxy (`proxy-url`) client-node's own agent is kept. Idle connections do not keep the
 * process alive (Node unrefs a free socket); the last `release()` closes them and gives the
 * `KubeConfig` back as it was.
 */
export function poolConnections(kubeConfig: KubeConfig): PooledConnections {
  let pool = pools.get(kubeConfig);
  if (pool === undefined) pool = makePool(kubeConfig);
  const held = pool;
  held.holders += 1;
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      held.holders -= 1;
      if (held.holders > 0) return;
      for (const agent of held.agents.values()) agent.destroy();
      held.agents.clear();
      held.restore();
      pools.delete(kubeConfig);
    },
    get opened() {
      return held.opened;
    },
  };
}

function makePool(kubeConfig: KubeConfig): Pool {
  const own = Object.hasOwn(kubeConfig, 'applySecurityAuthentication');
  const previous = kubeConfig.applySecurityAuthentication;
  const original = previous.bind(kubeConfig);
  const pool: Pool = {
    holders: 0,
    opened: 0,
    agents: new Map(),
    restore: () => {
      if (own) kubeConfig.applySecurityAuthentication = previous;
      else delete (kubeConfig as { applySecurityAuthentication?: unknown }).applySecurityAuthentication;
    },
  };
  kubeConfig.applySecurityAuthentication = async (context) => {
    await original(context);
    const made = context.getAgent();
    if (!(made instanceof HttpsAgent) || kubeConfig.getCurrentCluster()?.proxyUrl !== undefined) return;
    const lane = new URL(context.getUrl()).pathname.startsWith(LEASES) ? 'heartbeat' : 'requests';
    context.setAgent(agentFor(pool, lane, made.options));
  };
  pools.set(kubeConfig, pool);
  return pool;
}

/**
 * Lease requests go on connections of their own (the kubelet's `HeartbeatClient`): queued behind
 * a rollout's status patches on the shared ones, 1,000 hollow nodes stopped renewing for 80 s and
 * went NotReady. The Lease API's paths start so.
 */
const LEASES = '/apis/coordination.k8s.io/';

/**
 * How many connections each lane opens at most, and keeps idle. Heartbeats are never queued here:
 * 1,000 hollow nodes renew 100 Leases a second, and with the API server answering in about a second
 * under a rollout, 64 connections queued them until they answered in 49 s (p50) and every node went
 * NotReady. Other requests queue past 128, as client-go's rate limits hold a kubelet's.
 */
const LANES = {
  heartbeat: { maxSockets: 1_024, maxFreeSockets: 256 },
  requests: { maxSockets: 128, maxFreeSockets: 32 },
} as const;

function agentFor(pool: Pool, lane: 'requests' | 'heartbeat', options: AgentOptions): HttpsAgent {
  const key = `${lane}:${credentialsKey(options)}`;
  const known = pool.agents.get(key);
  if (known !== undefined) return known;
  const agent = new SettledHttpsAgent({ ...options, keepAlive: true, ...LANES[lane], scheduling: 'lifo' });
  const create = agent.createConnection.bind(agent);
  // Counted as opened, for the figures; one a request before the pool.
  agent.createConnection = ((...args: Parameters<typeof create>) => {
    pool.opened += 1;
    return create(...args);
  }) as typeof agent.createConnection;
  pool.agents.set(key, agent);
  for (const [old, stale] of pool.agents) {
    if (pool.agents.size <= MAX_AGENTS) break;
    stale.destroy();
    pool.agents.delete(old);
  }
  return agent;
}

/**
 * An agent that hands a freed connection on one turn of the event loop later. client-node reads
 * answers with node-fetch 2, which takes a chunked answer's `close` with a `data` listener still on
 * its socket for a cut-off body ("Premature close"); Node frees a keep-alive socket, and gives it to
 * a waiting request (which listens for `data`), before that answer's `close` is emitted. 200 lists
 * of 200 KB at once on 64 connections failed that way here, and so did 1,500 of 1,000 hollow nodes'
 * registrations. Deferred, the answer has closed before the socket carries the next request.
 */
class SettledHttpsAgent extends HttpsAgent {
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event !== 'free') return super.emit(event, ...args);
    setImmediate(() => super.emit('free', ...args));
    return true;
  }
}

/** What tells one set of TLS credentials from another (hashed: no key material is kept as a map key). */
function credentialsKey(o: AgentOptions): string {
  const hash = createHash('sha256');
  for (const part of [o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized]) {
    const parts = Array.isArray(part) ? part : [part];
    for (const p of parts)
      hash.update(p === undefined ? '\0u' : typeof p === 'object' && !Buffer.isBuffer(p) ? JSON.stringify(p) : String(p));
    hash.update('\0|');
  }
  return hash.digest('hex');
}
