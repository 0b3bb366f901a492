import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  HOST_NETWORK_SANDBOX_HASH,
  Labels,
  buildContainerName,
  sandboxHash,
  type ContainerRuntime,
  type ContainerSpec,
  type PortBinding,
  type SandboxSpec,
} from '@kubelet-ts/core';
import type { PodNetworkCapability } from './pod-contract.js';
import { podFixture } from './pod-fixture.js';
import type { TestApi } from './test-api.js';

interface V1ContractOptions {
  readonly name: string;
  readonly image: string;
  readonly command: readonly string[];
  readonly realExec?: boolean;
  readonly podNetwork?: PodNetworkCapability;
  readonly refusesStdinOnce?: boolean;
  readonly testApi: TestApi;
}

/**
 * The fields a Kubernetes v1 Pod brings (issue 15), as every runtime must run them: `entrypoint`
 * (the image's ENTRYPOINT) beside `command` (its CMD), a CPU limit, a port's host address, and
 * host-network sandboxes. Checks that need a real network run only where `podNetwork` is declared.
 */
export function v1Contract(runtime: () => ContainerRuntime, options: V1ContractOptions): void {
  const { describe, expect, it } = options.testApi;
  describe('v1 Pod fields', () => {
    const { run, withNetwork } = podFixture(runtime, options);

    const sandboxSpec = (podId: string, ports: readonly PortBinding[] = [], hostNetwork = false): SandboxSpec => ({
      name: buildContainerName(podId, 'POD'),
      podId,
      hostname: podId,
      ports,
      ...(hostNetwork ? { hostNetwork: true } : {}),
      labels: {
        [Labels.sandbox]: podId,
        [Labels.sandboxHash]: hostNetwork ? HOST_NETWORK_SANDBOX_HASH : sandboxHash(ports),
        [Labels.node]: 'contract-node',
        [Labels.source]: 'contract',
        [Labels.namespace]: 'contract-ns',
      },
    });
    const spec = (podId: string, container: string, fields: Partial<ContainerSpec> = {}): ContainerSpec => ({
      name: buildContainerName(podId, container),
      podId,
      image: options.image,
      command: options.command,
      env: {},
      ports: [],
      mounts: [],
      labels: {
        [Labels.manifestId]: podId,
        [Labels.containerName]: container,
        [Labels.specHash]: 'v1-0123456789abcdef',
        [Labels.source]: 'contract',
        [Labels.node]: 'contract-node',
      },
      ...fields,
    });
    /** What creating `s` threw; undefined when it was made. */
    const refusal = (s: ContainerSpec, sandboxId: string): Promise<unknown> =>
      runtime()
        .create(s, sandboxId)
        .then(
          () => undefined,
          (error: unknown) => error,
        );
    const started = async (s: ContainerSpec, sandboxId: string) => {
      const c = await runtime().create(s, sandboxId);
      await runtime().start(c.id);
      return c;
    };

    it('runs entrypoint as the ENTRYPOINT and command as its arguments (the CMD)', async () => {
      const sandbox = await run(sandboxSpec('v1-entry'));
      // `sh -c SCRIPT ARG`: only an entrypoint of [sh, -c] followed by the command makes $0 `from-command`.
      const script = 'echo "ran $0" > /v1-out; exec sleep 3600';
      const c = await started(spec('v1-entry', 'main', { entrypoint: ['sh', '-c'], command: [script, 'from-command'] }), sandbox.id);
      const details = await runtime().inspect(c.id);
      expect(details.spec.entrypoint).toEqual(['sh', '-c']);
      expect(details.spec.command).toEqual([script, 'from-command']);
      expect(details.state).toBe('running');
      if (options.realExec !== false) {
        // Empty until the script has run (the file does not exist yet).
        const read = async () => {
          const result = await runtime().exec(c.id, ['cat', '/v1-out'], 5000);
          return result.exitCode === 0 ? result.output : '';
        };
        expect(await eventually(read)).toContain('ran from-command');
      }
    });

    it('keeps the CPU limit and shows it back as cpuLimitMillis', async () => {
      const sandbox = await run(sandboxSpec('v1-cpu'));
      const c = await started(spec('v1-cpu', 'main', { cpuLimitMillis: 250 }), sandbox.id);
      expect((await runtime().inspect(c.id)).spec.cpuLimitMillis).toBe(250);
      // Without a limit, none is shown.
      const free = await started(spec('v1-cpu', 'free'), sandbox.id);
      expect((await runtime().inspect(free.id)).spec.cpuLimitMillis).toBeUndefined();
    });

    it("sets the pod's sysctls in its namespaces, where its containers read them", async () => {
      const sysctls = { 'net.ipv4.ip_local_port_range': '40000 50000', 'kernel.shm_rmid_forced': '1' };
      const sandbox = await run({ ...sandboxSpec('v1-sysctls'), sysctls });
      const c = await started(spec('v1-sysctls', 'main', { ipcSysctls: { 'kernel.shm_rmid_forced': '1' } }), sandbox.id);
      expect((await runtime().inspect(c.id)).state).toBe('running');
      if (options.realExec === false) return;
      const read = await runtime().exec(c.id, ['cat', '/proc/sys/net/ipv4/ip_local_port_range', '/proc/sys/kernel/shm_rmid_forced'], 5000);
      expect(read.exitCode).toBe(0);
      expect(read.output.split('\n').map((l) => l.trim().split(/\s+/).join(' '))).toEqual(['40000 50000', '1', '']);
      // Another pod's namespaces keep the host's defaults.
      const other = await run(sandboxSpec('v1-sysctls-none'));
      const plain = await started(spec('v1-sysctls-none', 'main'), other.id);
      const range = await runtime().exec(plain.id, ['cat', '/proc/sys/net/ipv4/ip_local_port_range'], 5000);
      expect(/40000\s+50000/.test(range.output)).toBe(false);
    });

    it("gives the pod's containers its resolver as their /etc/resolv.conf", async () => {
      const dns = {
        servers: ['192.0.2.53', '198.51.100.53'],
        searches: ['team.example.test', 'example.test'],
        options: ['ndots:2', 'edns0'],
      };
      const sandbox = await run({ ...sandboxSpec('v1-dns'), dns });
      const c = await started(spec('v1-dns', 'main'), sandbox.id);
      expect((await runtime().inspect(c.id)).state).toBe('running');
      if (options.realExec === false) return;
      const lines = async (id: string) => {
        const read = await runtime().exec(id, ['cat', '/etc/resolv.conf'], 5000);
        expect(read.exitCode).toBe(0);
        return read.output
          .split('\n')
          .map((l) => l.trim().split(/\s+/).join(' '))
          .filter((l) => l !== '' && !l.startsWith('#'));
      };
      // Each line as written, in whatever order the runtime writes the kinds of line.
      expect((await lines(c.id)).sort()).toEqual([
        'nameserver 192.0.2.53',
        'nameserver 198.51.100.53',
        'options ndots:2 edns0',
        'search team.example.test example.test',
      ]);
      // No search domain at all is none, not the host's.
      const bare = await run({ ...sandboxSpec('v1-dns-bare'), dns: { servers: ['192.0.2.53'], searches: [], options: ['ndots:1'] } });
      const b = await started(spec('v1-dns-bare', 'main'), bare.id);
      expect((await lines(b.id)).filter((l) => !l.startsWith('options'))).toEqual(['nameserver 192.0.2.53']);
    });

    it('runs a container under a Localhost seccomp profile, the JSON file its path names; one that cannot be read is refused', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-seccomp-'));
      try {
        // Everything allowed but making a directory, which fails with EPERM.
        const profile = join(dir, 'deny-mkdir.json');
        await writeFile(
          profile,
          JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }] }),
        );
        const sandbox = await run(sandboxSpec('v1-seccomp'));
        const confined = await started(
          spec('v1-seccomp', 'confined', { security: { seccomp: { type: 'Localhost', localhostProfile: profile } } }),
          sandbox.id,
        );
        expect((await runtime().inspect(confined.id)).state).toBe('running');
        if (options.realExec !== false) {
          const denied = await runtime().exec(confined.id, ['mkdir', '/made-here'], 5000);
          expect(denied.exitCode).not.toBe(0);
          expect(denied.output).toContain('Operation not permitted');
          const free = await started(spec('v1-seccomp', 'free'), sandbox.id);
          expect((await runtime().exec(free.id, ['mkdir', '/made-here'], 5000)).exitCode).toBe(0);
        }
        const missing = spec('v1-seccomp', 'missing', {
          security: { seccomp: { type: 'Localhost', localhostProfile: join(dir, 'none.json') } },
        });
        // An engine opens the file when it makes the container; a runtime that runs no process opens none.
        if (options.realExec !== false) {
          expect(await refusal(missing, sandbox.id)).toBeInstanceOf(Error);
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it("holds a stdin container's standard input open, gives a tty container a terminal, and reads a terminal's output back", async () => {
      const sandbox = await run(sandboxSpec('v1-stdin'));
      const once = spec('v1-stdin', 'held', { command: ['sleep', '3600'], stdin: true, stdinOnce: true });
      if (options.refusesStdinOnce === true) {
        expect(await refusal(once, sandbox.id)).toBeInstanceOf(Error);
      }
      const held = await started(options.refusesStdinOnce === true ? { ...once, stdinOnce: false } : once, sandbox.id);
      const terminal = await started(
        spec('v1-stdin', 'terminal', { command: ['sh', '-c', 'echo on-a-terminal; exec sleep 3600'], tty: true }),
        sandbox.id,
      );
      const plain = await started(spec('v1-stdin', 'plain', { command: ['sleep', '3600'] }), sandbox.id);
      expect((await runtime().inspect(held.id)).spec).toMatchObject({
        stdin: true,
        ...(options.refusesStdinOnce === true ? {} : { stdinOnce: true }),
      });
      expect((await runtime().inspect(terminal.id)).spec).toMatchObject({ tty: true });
      expect((await runtime().inspect(plain.id)).spec.tty).toBeUndefined();
      if (options.realExec === false) return;
      const stdinOf = async (id: string) => (await runtime().exec(id, ['readlink', '/proc/1/fd/0'], 5000)).output.trim();
      expect(await stdinOf(plain.id)).toBe('/dev/null');
      expect(await stdinOf(held.id)).not.toBe('/dev/null');
      expect(/^\/dev\/pts\/\d+$/.test(await stdinOf(terminal.id))).toBe(true);
      const logs = runtime().capabilities.logs;
      if (logs === undefined) return;
      const printed = async () => {
        let text = '';
        for await (const line of await logs.logs(terminal.id, {})) text += new TextDecoder().decode(line.content);
        return text;
      };
      // A terminal's output is stdout, its lines ended as the terminal ends them (\r\n).
      const text = await eventually(async () => ((await printed()).includes('on-a-terminal') ? await printed() : ''));
      expect(/^on-a-terminal\r?\n$/.test(text)).toBe(true);
      for await (const line of await logs.logs(terminal.id, {})) expect(line.stream).toBe('stdout');
      // The text read, where the runtime has one, hands on the same bytes.
      if (logs.text !== undefined) {
        let whole = '';
        for await (const chunk of await logs.text(terminal.id, {})) whole += new TextDecoder().decode(chunk);
        expect(whole).toBe(text);
      }
    });

    it('runs a host-network sandbox that publishes nothing, lists it as ours and ready, and runs containers in it', async () => {
      const s = sandboxSpec('v1-hostnet', [], true);
      const sandbox = await run(s);
      const listed = (await runtime().listSandboxes()).find((x) => x.id === sandbox.id);
      expect(listed?.state).toBe('ready');
      expect(listed?.labels).toMatchObject(s.labels);
      const c = await started(spec('v1-hostnet', 'main'), sandbox.id);
      expect((await runtime().inspect(c.id)).state).toBe('running');
    });

    withNetwork('serves a container of a host-network sandbox on the host at 127.0.0.1:<its port>, with no port published', async (n) => {
      const port = await n.hostPort();
      const sandbox = await run(sandboxSpec('v1-hostnet-serve', [], true));
      await started(spec('v1-hostnet-serve', 'server', { command: n.server(port, 'on-the-host') }), sandbox.id);
      expect(await eventually(async () => (await fetch(`http://127.0.0.1:${port}/`)).text())).toContain('on-the-host');
    });

    withNetwork('publishes a port on its hostIp: 127.0.0.2 answers, 127.0.0.1 does not', async (n) => {
      const port = await n.hostPort();
      const sandbox = await run(sandboxSpec('v1-hostip', [{ containerPort: 8080, hostPort: port, hostIp: '127.0.0.2', protocol: 'TCP' }]));
      await started(spec('v1-hostip', 'server', { command: n.server(8080, 'on-its-address') }), sandbox.id);
      expect(await eventually(async () => (await fetch(`http://127.0.0.2:${port}/`)).text())).toContain('on-its-address');
      const other = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => `answered ${r.status}`,
        () => 'no answer',
      );
      expect(other).toBe('no answer');
    });
  });
}

/** The first answer that contains something, retried for up to 10 s (a server needs a moment to listen). */
async function eventually(read: () => Promise<string>): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const text = await read();
      if (text.trim() !== '' || Date.now() > deadline) return text;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
