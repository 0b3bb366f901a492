import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
// The handler its Exec, Attach and PortForward use, pointed at the agent's own paths (not exported from the index).
import { WebSocketHandler } from '@kubernetes/client-node/dist/web-socket-handler.js';
import { TestCertificates } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';

const TOKEN = 'streams-e2e-token-0123456789abcdef01234';
const idle = 'trap "exit 0" TERM; while true; do sleep 1; done';

/** What a session sent, by channel, once the server closed it. */
interface Session {
  readonly channels: Map<number, Buffer>;
  readonly protocol: string;
  send(channel: number, data: Buffer | string): void;
  readonly closed: Promise<void>;
  close(): void;
  /** Resolves once channel `n` holds `text` (10 s at most). */
  until(n: number, text: string): Promise<void>;
}

describe.each(AGENT_ENGINES)(
  'exec, attach and port-forward on $name, through the agent, by @kubernetes/client-node (issue 23)',
  (engine) => {
    const node = `e2e-streams-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
    let dir: string;
    let agent: AgentProcess | undefined;
    let handler: WebSocketHandler;
    let url: string;
    let certs: TestCertificates;

    /** A session opened by the Kubernetes client's own WebSocket handler (it offers v5, then v4, …). */
    const open = async (path: string): Promise<Session> => {
      const channels = new Map<number, Buffer>();
      const waiters = new Set<() => void>();
      const ws = await handler.connect(path, null, (stream: number, buff: Buffer) => {
        channels.set(stream, Buffer.concat([channels.get(stream) ?? Buffer.alloc(0), buff]));
        for (const w of [...waiters]) w();
        return true;
      });
      const closed = new Promise<void>((resolve) => ws.on('close', () => resolve()));
      return {
        channels,
        protocol: ws.protocol,
        send: (channel, data) => ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(data)])),
        closed,
        close: () => ws.close(),
        until: (n, text) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`channel ${n} did not hold ${JSON.stringify(text)}: ${channels.get(n)}`)),
              10_000,
            );
            const check = () => {
              if (!(channels.get(n)?.toString('latin1') ?? '').includes(text)) return;
              clearTimeout(timer);
              waiters.delete(check);
              resolve();
            };
            waiters.add(check);
            check();
          }),
      };
    };
    const exec = (container: string, command: string[], query: string) =>
      `/exec/default/shell/${container}?${command.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&${query}`;

    beforeAll(async () => {
      const { flags, busybox } = await engine.prepare();
      dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-streams-'));
      await writeFile(
        join(dir, 'shell.yaml'),
        JSON.stringify({
          version: 'v1beta1',
          id: 'shell',
          containers: [
            { name: 'main', image: busybox, command: ['sh', '-c', idle] },
            { name: 'echo', image: busybox, command: ['nc', '-ll', '-p', '8080', '-e', 'cat'] },
          ],
        }),
      );
      // Over TLS: kubectl sends no bearer token over plain HTTP.
      certs = await TestCertificates.create();
      const tls = ['--tls-cert-file', certs.server.certFile, '--tls-private-key-file', certs.server.keyFile];
      agent = new AgentProcess([
        ...flags,
        ...tls,
        '--config',
        dir,
        '--hostname-override',
        node,
        '--auth-token',
        TOKEN,
        '--sync-frequency',
        '1s',
      ]);
      url = (await agent.serverUrl()).replace(/^http:/, 'https:');
      await agent.until(() => agent!.events('ContainerStarted', 'shell').length === 2, 'both containers started', 60_000);
      const config = new KubeConfig();
      config.loadFromOptions({
        // Plain HTTP on loopback: the client refuses it unless told TLS is not verified (there is none).
        clusters: [{ name: 'agent', server: url, caFile: certs.ca.certFile }],
        users: [{ name: 'operator', token: TOKEN }],
        contexts: [{ name: 'agent', cluster: 'agent', user: 'operator' }],
        currentContext: 'agent',
      });
      handler = new WebSocketHandler(config);
    }, 120_000);

    afterAll(async () => {
      await agent?.stop();
      await engine.cleanUp(node);
      await rm(dir, { recursive: true, force: true });
      await certs?.destroy();
    });

    it('POST /run, read by kubectl (create --raw is a POST): the output as text; a failed command is refused', async () => {
      const kubectl = (path: string) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
          execFile(
            'kubectl',
            ['--server', url, '--token', TOKEN, '--certificate-authority', certs.ca.certFile, 'create', '--raw', path, '-f', '/dev/null'],
            { timeout: 30_000 },
            (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? -1), stdout, stderr }),
          ),
        );
      expect(await kubectl('/run/default/shell/main?cmd=echo+from+run')).toEqual({ code: 0, stdout: 'from run\n', stderr: '' });
      const failed = await kubectl('/run/default/shell/main?cmd=false');
      expect(failed.code).not.toBe(0);
      // kubectl reads our 500 as a server error (its body is ours, not a metav1.Status).
      expect(failed.stderr).toContain('Error from server (InternalError)');
    });

    it('exec on v5: stdout and stderr apart, and the exit code as the NonZeroExitCode status', async () => {
      const s = await open(exec('main', ['sh', '-c', 'echo out; echo err >&2; exit 3'], 'stdout=true&stderr=true'));
      expect(s.protocol).toBe('v5.channel.k8s.io');
      await s.closed;
      expect([s.channels.get(1)?.toString(), s.channels.get(2)?.toString()]).toEqual(['out\n', 'err\n']);
      expect(JSON.parse(s.channels.get(3)!.toString())).toMatchObject({
        status: 'Failure',
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: '3' }] },
      });
    });

    it('exec with stdin: what is sent reaches cat, and the v5 close message is its end-of-file', async () => {
      const tty = engine.stdinEndsOnTtyOnly === true;
      const s = await open(exec('main', ['cat'], `stdin=true&stdout=true&${tty ? 'tty=true' : 'stderr=true'}`));
      s.send(0, 'typed\n');
      await s.until(1, 'typed');
      s.send(255, Buffer.from([0]));
      await s.closed;
      expect(JSON.parse(s.channels.get(3)!.toString())).toMatchObject({ status: 'Success' });
    });

    it('exec with a terminal: a resize reaches the process', async () => {
      const s = await open(exec('main', ['sh'], 'stdin=true&stdout=true&tty=true'));
      s.send(4, JSON.stringify({ Width: 101, Height: 41 }));
      // A resize has no answer, and containerd sets it apart from stdin a moment after reading
      // it: the shell at the terminal is asked until it sees the new size.
      const asking = setInterval(() => s.send(0, 'stty size\n'), 100);
      try {
        await s.until(1, '41 101');
      } finally {
        clearInterval(asking);
      }
      s.send(0, 'exit\n');
      await s.closed;
    });

    it('attach: what the main process prints (written to its own stdout)', async () => {
      const s = await open('/attach/default/shell/main?stdout=true&stderr=true');
      const printed = await open(exec('main', ['sh', '-c', 'echo attached-line >/proc/1/fd/1'], 'stdout=true'));
      await printed.closed;
      await s.until(1, 'attached-line\n');
      s.close();
    });

    it('port-forward: the port first on both channels, then an echo through the pod port; two connections at once', async () => {
      const [a, b] = await Promise.all([open('/portForward/default/shell?ports=8080'), open('/portForward/default/shell?ports=8080')]);
      for (const s of [a!, b!]) {
        expect(s.protocol).toBe('v4.channel.k8s.io');
        await s.until(1, '\x90\x1f'); // 8080, little-endian, on the error channel too
      }
      a!.send(0, 'one\n');
      b!.send(0, 'two\n');
      await a!.until(0, 'one\n');
      await b!.until(0, 'two\n');
      expect(a!.channels.get(0)!.subarray(0, 2).readUInt16LE()).toBe(8080);
      a!.close();
      b!.close();
    });

    it('port-forward to a port nothing listens on: the reason on its error channel', async () => {
      const s = await open('/portForward/default/shell?ports=8081');
      await s.until(1, 'error forwarding port 8081 to pod default/shell');
      s.close();
    });
  },
);
