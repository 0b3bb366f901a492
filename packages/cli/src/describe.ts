import { Command } from 'commander';
import { since } from '@kubelet-ts/source-server/pod-printing';
import { AgentClientError } from './agent-client.js';
import { addConnectionOptions, failed, openAgent, parseClientCommand, type ConnectionOptions } from './connection.js';
import { compare, type GetIo } from './get-context.js';
import { byLastSeen, eventInterval, isAboutPod } from './get-events.js';
import { statusColour } from './get-pods.js';
import { KUBECTL_DESCRIBE, colourWanted, tabwrite, type Cell, type Colour } from './table.js';
import {
  namespaceOf,
  type V1Container,
  type V1ContainerState,
  type V1ContainerStatus,
  type V1EnvVarSource,
  type V1Event,
  type V1Pod,
  type V1Probe,
} from './v1.js';

/** The annotations that say where a pod came from (the agent's source, and the kubelet's kind of source). */
const SOURCE_ANNOTATION = 'kubelet-ts.io/source';
const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
/** kubectl folds an annotation longer than this onto lines of its own (`maxAnnotationLen`). */
const MAX_ANNOTATION = 140;

/** `kubelet-ts describe`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function describeProgram(): Command {
  return addConnectionOptions(new Command('kubelet-ts describe'))
    .description(
      "show a pod of a running agent in detail: its containers' state, probes, conditions, source and events (as kubectl describe)",
    )
    .argument('<resource>', 'pod (pods, po)')
    .argument('[names...]', "the pods' names (default: every pod of the namespace)");
}

/**
 * `kubelet-ts describe pod [NAME…]`: a pod of a running agent as `kubectl describe pod` lays it
 * out (`describePod` in kubectl's describe.go: the same fields, order and alignment), with where
 * it came from (its source) before its events (`GET /events`). Without a name, every pod of the
 * namespace. A pod the agent does not have is one line and exit 1.
 */
export async function describeMain(argv: readonly string[], io: GetIo = process): Promise<number> {
  const program = describeProgram();
  const ended = parseClientCommand(program, argv, io);
  if (ended !== undefined) return ended;
  const [resource = '', ...names] = program.args;
  try {
    if (!['pod', 'pods', 'po'].includes(resource))
      throw new AgentClientError(`cannot describe ${JSON.stringify(resource)}: only pods (kubelet-ts describe pod NAME)`);
    const { client, namespace } = await openAgent(program.opts<ConnectionOptions>(), io.env);
    const list = (await client.json('/pods')) as { items?: V1Pod[] };
    const inNamespace = (list.items ?? []).filter((p) => namespaceOf(p) === namespace);
    const pods =
      names.length === 0
        ? inNamespace.sort((a, b) => compare(a.metadata.name, b.metadata.name))
        : names.map((name) => {
            const pod = inNamespace.find((p) => p.metadata.name === name);
            if (pod === undefined) throw new AgentClientError(`pod "${namespace}/${name}" is not on this agent (see kubelet-ts get pods)`);
            return pod;
          });
    if (pods.length === 0) {
      io.stderr.write(`No resources found in ${namespace} namespace.\n`);
      return 0;
    }
    const events = ((await client.json('/events')) as { items?: V1Event[] }).items ?? [];
    const now = (io.now ?? Date.now)();
    const colour = colourWanted(io);
    const texts = pods.map((pod) => {
      const own = events.filter((e) => isAboutPod(e, pod.metadata.name, namespaceOf(pod), pod.metadata.uid)).sort(byLastSeen);
      return tabwrite(describePod(pod, own, now), KUBECTL_DESCRIBE, { colour });
    });
    io.stdout.write(texts.join('\n\n'));
    return 0;
  } catch (error) {
    return failed('kubelet-ts describe', error, io.stderr);
  }
}

/** The lines of `kubectl describe pod`, as cells for the tab writer (a level indents by two spaces, as its PrefixWriter does). */
/**
 * A variable read from elsewhere, as kubectl describe shows it: a Secret's or a ConfigMap's key by
 * name (never its value) with whether it is optional, a pod field with its value where the pod
 * tells it, a resource with the container's figure ("node allocatable" where it sets none).
 */
function valueFromCells(from: V1EnvVarSource, pod: V1Pod, c: V1Container): Cell[] {
  if (from.secretKeyRef !== undefined)
    return [
      `<set to the key '${from.secretKeyRef.key}' in secret '${from.secretKeyRef.name ?? ''}'>`,
      `Optional: ${from.secretKeyRef.optional === true}`,
    ];
  if (from.configMapKeyRef !== undefined)
    return [
      `<set to the key '${from.configMapKeyRef.key}' of config map '${from.configMapKeyRef.name ?? ''}'>`,
      `Optional: ${from.configMapKeyRef.optional === true}`,
    ];
  if (from.fieldRef !== undefined) {
    const { apiVersion = 'v1', fieldPath } = from.fieldRef;
    const known: Record<string, string | undefined> = {
      'metadata.name': pod.metadata.name,
      'metadata.namespace': namespaceOf(pod),
      'metadata.uid': pod.metadata.uid,
      'spec.nodeName': pod.spec?.nodeName,
      'status.podIP': pod.status?.podIP,
      'status.hostIP': pod.status?.hostIP,
    };
    return [`${known[fieldPath] ?? ''} (${apiVersion}:${fieldPath})`];
  }
  if (from.resourceFieldRef !== undefined) {
    const { resource } = from.resourceFieldRef;
    const [kind, name] = resource.split('.') as [string, string];
    const amounts = kind === 'limits' ? c.resources?.limits : kind === 'requests' ? c.resources?.requests : undefined;
    const figure = amounts?.[name] ?? (kind === 'limits' ? 'node allocatable' : '0');
    return [`${figure} (${resource})`];
  }
  return [''];
}

export function describePod(pod: V1Pod, events: readonly V1Event[], now: number): Cell[][] {
  const lines: Cell[][] = [];
  const w: Write = (level, first, ...rest) => lines.push([indented(level, first), ...rest]);
  const status = pod.status ?? {};
  w(0, 'Name:', pod.metadata.name);
  w(0, 'Namespace:', namespaceOf(pod));
  w(0, 'Node:', pod.spec?.nodeName ? `${pod.spec.nodeName}/${status.hostIP ?? ''}` : '<none>');
  if (status.startTime !== undefined) w(0, 'Start Time:', rfc1123z(status.startTime));
  multiline(
    lines,
    'Labels:',
    sortedEntries(pod.metadata.labels).map(([k, v]) => [`${k}=${v}`]),
  );
  multiline(lines, 'Annotations:', annotationLines(pod.metadata.annotations ?? {}));
  const phase = status.phase ?? '';
  const deletion = pod.metadata.deletionTimestamp;
  if (deletion !== undefined && phase !== 'Succeeded' && phase !== 'Failed') {
    // As kubectl describes a pod on its way out.
    w(0, 'Status:', { text: `Terminating (lasts ${since(deletion, now)})`, colour: statusColour('Terminating') });
    if (pod.metadata.deletionGracePeriodSeconds !== undefined)
      w(0, 'Termination Grace Period:', `${pod.metadata.deletionGracePeriodSeconds}s`);
  } else w(0, 'Status:', { text: phase, colour: statusColour(phase) });
  if (status.reason) w(0, 'Reason:', status.reason);
  if (status.message) w(0, 'Message:', status.message);
  w(0, 'IP:', status.podIP ?? '');
  if ((status.podIPs ?? []).length === 0) w(0, 'IPs:', '<none>');
  else {
    w(0, 'IPs:');
    for (const ip of status.podIPs ?? []) w(1, 'IP:', ip.ip ?? '');
  }
  // kubectl lists the init containers first, when there are any.
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length > 0) w(0, 'Init Containers:');
  for (const c of inits)
    describeContainer(
      w,
      pod,
      c,
      status.initContainerStatuses?.find((s) => s.name === c.name),
    );
  const containers = pod.spec?.containers ?? [];
  w(0, `Containers:${containers.length === 0 ? ' <none>' : ''}`);
  for (const c of containers)
    describeContainer(
      w,
      pod,
      c,
      status.containerStatuses?.find((s) => s.name === c.name),
    );
  if ((status.conditions ?? []).length > 0) {
    w(0, 'Conditions:');
    w(1, 'Type', 'Status');
    for (const c of status.conditions ?? []) w(1, `${c.type} `, `${c.status} `);
  }
  const volumes = pod.spec?.volumes ?? [];
  if (volumes.length === 0) w(0, 'Volumes:', '<none>');
  else w(0, 'Volumes:');
  for (const v of volumes) {
    w(1, `${v.name}:`);
    if (v.hostPath !== undefined) {
      w(2, 'Type:', 'HostPath (bare host directory volume)');
      w(2, 'Path:', v.hostPath.path ?? '');
      w(2, 'HostPathType:', v.hostPath.type ?? '<none>');
    } else if (v.emptyDir !== undefined) {
      w(2, 'Type:', "EmptyDir (a temporary directory that shares a pod's lifetime)");
      w(2, 'Medium:', v.emptyDir.medium ?? '');
      w(2, 'SizeLimit:', v.emptyDir.sizeLimit ?? '<unset>');
    } else w(2, '<unknown>');
  }
  if (status.qosClass !== undefined) w(0, 'QoS Class:', status.qosClass);
  const annotations = pod.metadata.annotations ?? {};
  const source = annotations[SOURCE_ANNOTATION];
  const kind = annotations[CONFIG_SOURCE_ANNOTATION];
  w(0, 'Source:', `${source ?? '<unknown>'}${kind === undefined ? '' : ` (${CONFIG_SOURCE_ANNOTATION}=${kind})`}`);
  if (events.length === 0) w(0, 'Events:', '<none>');
  else {
    w(0, 'Events:');
    w(1, 'Type', 'Reason', 'Age', 'From', 'Message');
    w(1, '----', '------', '----', '----', '-------');
    for (const e of events) {
      const warning: Colour | undefined = e.type === 'Warning' ? 'yellow' : undefined;
      const type = { text: e.type ?? '', colour: warning };
      w(1, type, { text: e.reason ?? '', colour: warning }, eventInterval(e, now), e.source?.component ?? '', (e.message ?? '').trim());
    }
  }
  return lines;
}

type Write = (level: number, first: Cell, ...rest: Cell[]) => void;

/** A line's first cell after its level's indent, two spaces a level (kubectl's PrefixWriter). */
function indented(level: number, cell: Cell): Cell {
  const indent = '  '.repeat(level);
  return typeof cell === 'string' ? `${indent}${cell}` : { ...cell, text: `${indent}${cell.text}` };
}

function describeContainer(w: Write, pod: V1Pod, c: V1Container, status: V1ContainerStatus | undefined): void {
  w(1, `${c.name}:`);
  if (status !== undefined) w(2, 'Container ID:', status.containerID ?? '');
  w(2, 'Image:', c.image ?? '');
  if (status !== undefined) w(2, 'Image ID:', status.imageID ?? '');
  const ports = (c.ports ?? []).map((p) => `${p.containerPort ?? 0}/${p.protocol ?? 'TCP'}`);
  const hostPorts = (c.ports ?? []).map((p) => `${p.hostPort ?? 0}/${p.protocol ?? 'TCP'}`);
  w(2, ports.length > 1 ? 'Ports:' : 'Port:', ports.join(', ') || '<none>');
  w(2, hostPorts.length > 1 ? 'Host Ports:' : 'Host Port:', hostPorts.join(', ') || '<none>');
  for (const [title, words] of [
    ['Command:', c.command],
    ['Args:', c.args],
  ] as const) {
    if (words === undefined || words.length === 0) continue;
    w(2, title);
    for (const word of words) for (const part of word.split('\n')) w(3, part);
  }
  if (status !== undefined) {
    describeState(w, 'State:', status.state ?? {});
    if (status.lastState?.terminated !== undefined) describeState(w, 'Last State:', status.lastState);
    w(2, 'Ready:', status.ready === true ? 'True' : 'False');
    w(2, 'Restart Count:', String(status.restartCount ?? 0));
  }
  for (const [title, amounts] of [
    ['Limits:', c.resources?.limits],
    ['Requests:', c.resources?.requests],
  ] as const) {
    const entries = Object.entries(amounts ?? {}).sort(([a], [b]) => compare(a, b));
    if (entries.length > 0) w(2, title);
    for (const [name, quantity] of entries) w(3, `${name}:`, quantity);
  }
  for (const [title, probe] of [
    ['Liveness:', c.livenessProbe],
    ['Readiness:', c.readinessProbe],
    ['Startup:', c.startupProbe],
  ] as const)
    if (probe !== undefined) w(2, title, describeProbe(probe));
  const env = c.env ?? [];
  if (env.length === 0) w(2, 'Environment:', '<none>');
  else w(2, 'Environment:');
  for (const e of env) {
    const from = e.valueFrom;
    if (from === undefined) (e.value ?? '').split('\n').forEach((part, i) => (i === 0 ? w(3, `${e.name}:`, part) : w(3, '', part)));
    else w(3, `${e.name}:`, ...valueFromCells(from, pod, c));
  }
  const mounts = [...(c.volumeMounts ?? [])].sort((a, b) => compare(a.mountPath, b.mountPath));
  if (mounts.length === 0) w(2, 'Mounts:', '<none>');
  else w(2, 'Mounts:');
  for (const m of mounts) {
    const flags = [m.readOnly === true ? 'ro' : 'rw', ...(m.subPath ? [`path=${JSON.stringify(m.subPath)}`] : [])];
    w(3, `${m.mountPath} from ${m.name} (${flags.join(',')})`);
  }
}

function describeState(w: Write, title: string, state: V1ContainerState): void {
  if (state.running !== undefined) {
    w(2, title, { text: 'Running', colour: 'green' });
    w(3, 'Started:', rfc1123z(state.running.startedAt));
  } else if (state.terminated !== undefined) {
    const t = state.terminated;
    w(2, title, 'Terminated');
    if (t.reason) w(3, 'Reason:', { text: t.reason, colour: t.exitCode === 0 ? undefined : 'red' });
    if (t.message) w(3, 'Message:', t.message);
    w(3, 'Exit Code:', String(t.exitCode ?? 0));
    if ((t.signal ?? 0) > 0) w(3, 'Signal:', String(t.signal));
    w(3, 'Started:', rfc1123z(t.startedAt));
    w(3, 'Finished:', rfc1123z(t.finishedAt));
  } else {
    w(2, title, 'Waiting');
    const reason = state.waiting?.reason;
    if (reason) w(3, 'Reason:', { text: reason, colour: statusColour(reason) });
  }
}

/**
 * A probe as kubectl's `DescribeProbe` says it: `exec [cat /tmp/healthy]`, `http-get
 * http://:8080/healthz`, `tcp-socket :5432` or `grpc <pod>:2379 <default>`, then its timings and thresholds.
 */
export function describeProbe(p: V1Probe): string {
  const attrs = `delay=${p.initialDelaySeconds ?? 0}s timeout=${p.timeoutSeconds ?? 1}s period=${p.periodSeconds ?? 10}s #success=${p.successThreshold ?? 1} #failure=${p.failureThreshold ?? 3}`;
  if (p.exec !== undefined) return `exec [${(p.exec.command ?? []).join(' ')}] ${attrs}`;
  if (p.httpGet !== undefined) {
    const host = p.httpGet.host ?? '';
    const port = p.httpGet.port === undefined ? '' : String(p.httpGet.port);
    const hostPort = port === '' ? host : `${host.includes(':') ? `[${host}]` : host}:${port}`;
    return `http-get ${(p.httpGet.scheme ?? 'HTTP').toLowerCase()}://${hostPort}${p.httpGet.path ?? ''} ${attrs}`;
  }
  if (p.tcpSocket !== undefined) return `tcp-socket ${p.tcpSocket.host ?? ''}:${p.tcpSocket.port ?? ''} ${attrs}`;
  if (p.grpc !== undefined) return `grpc <pod>:${p.grpc.port ?? ''} ${p.grpc.service || '<default>'} ${attrs}`;
  return `unknown ${attrs}`;
}

/** kubectl's multi-line fields (labels, annotations): the first after the title, the rest under it; `<none>` when empty. */
function multiline(lines: Cell[][], title: string, entries: readonly string[][]): void {
  if (entries.length === 0) {
    lines.push([title, '<none>']);
    return;
  }
  entries.forEach((entry, i) => entry.forEach((text, j) => lines.push([i === 0 && j === 0 ? title : '', text])));
}

/** A record's entries by key, in byte order (Go's `sort.Strings`). */
function sortedEntries(record: Readonly<Record<string, string>> | undefined): [string, string][] {
  return Object.entries(record ?? {}).sort(([a], [b]) => compare(a, b));
}

/** Annotations as kubectl prints them: `key: value`, or a long or multi-line value on lines of its own under `key:`. */
function annotationLines(annotations: Readonly<Record<string, string>>): string[][] {
  return sortedEntries(annotations).map(([key, raw]) => {
    const value = raw.replace(/\n$/, '');
    if (value.length + key.length + 2 <= MAX_ANNOTATION && !value.includes('\n')) return [`${key}: ${value}`];
    const shorten = (s: string) => (s.length > MAX_ANNOTATION - 2 ? `${s.slice(0, MAX_ANNOTATION - 2)}...` : s);
    return [`${key}:`, ...value.split('\n').map((s) => `  ${shorten(s)}`)];
  });
}

/** A time as Go's RFC1123Z in the local zone, as kubectl describe prints times: `Mon, 02 Jan 2006 15:04:05 -0700`. */
export function rfc1123z(time: string | undefined): string {
  const ms = Date.parse(time ?? '');
  if (Number.isNaN(ms)) return '<unknown>';
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  const offset = -d.getTimezoneOffset();
  const zone = `${offset < 0 ? '-' : '+'}${two(Math.trunc(Math.abs(offset) / 60))}${two(Math.abs(offset) % 60)}`;
  const day = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][d.getDay()];
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getMonth()];
  return `${day}, ${two(d.getDate())} ${month} ${d.getFullYear()} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())} ${zone}`;
}
