import { row, summarise, type Row } from '../stats.js';
import type { LogsPod } from './logs-agent.js';
import { criLogsEngine, dockerLogsEngine, type LogsEngine } from './logs-engines.js';
import { podProcess, startStreamsAgent, type StreamsAgent } from './streams-agent.js';
import { criExecBaselines, dockerExecBaselines, type ExecBaselines } from './streams-baselines.js';
import { channelSession } from './streams-clients.js';
import { streamsLoad } from './streams-load.js';
import { eventually, portForwardThroughput } from './streams-throughput.js';

export const STREAMS_SCENARIO = '11. exec and port-forward';

/** Sizes of the exec and port-forward scenario (issue 23). */
export interface StreamsSizes {
  /** Timed exec round trips, each of the agent's beside each of the engine's own. */
  readonly execRuns: number;
  /** MB (10^6 bytes) sent each way through one forwarded connection. */
  readonly forwardMB: number;
  /** Timed transfers each way, each through the agent beside each direct one. */
  readonly forwardRuns: number;
  /** Exec sessions, then forwarded connections, at once. */
  readonly sessions: number;
  /** How long after the last session ended the agent's RSS and descriptors are read again. */
  readonly settleSeconds: number;
}

const FULL: StreamsSizes = { execRuns: 30, forwardMB: 200, forwardRuns: 3, sessions: 50, settleSeconds: 10 };
const QUICK: StreamsSizes = { execRuns: 3, forwardMB: 10, forwardRuns: 1, sessions: 5, settleSeconds: 1 };

/** The full or quick sizes, with what `KUBELET_TS_BENCH_STREAMS` (a JSON object of `StreamsSizes` fields) changes. */
export function streamsSizes(quick: boolean): StreamsSizes {
  const changes = process.env['KUBELET_TS_BENCH_STREAMS'];
  const sizes: StreamsSizes = {
    ...(quick ? QUICK : FULL),
    ...(changes === undefined || changes === '' ? {} : (JSON.parse(changes) as Partial<StreamsSizes>)),
  };
  for (const [name, value] of Object.entries(sizes))
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new Error(`KUBELET_TS_BENCH_STREAMS: ${name} must be a whole number above 0, got ${JSON.stringify(value)}`);
  return sizes;
}

const POD = 'streams';
const [DOWNLOAD, UPLOAD, ECHO] = [8080, 8081, 8082];
const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
/** The 90th percentile (nearest rank, as `summarise` takes its p95). */
const p90 = (samples: readonly number[]) => [...samples].sort((a, b) => a - b)[Math.ceil(0.9 * samples.length) - 1]!;

/**
 * The pod: busybox servers on three ports, each a process per connection (`nc -ll -e`): one that
 * sends `mb` MB and closes, one that reads `mb` MB and says `ok`, and an echo. The marker finds
 * its process (and so its network namespace) on the host.
 */
function streamsPod(image: string, mb: number, marker: string): LogsPod {
  const script = [
    `: ${marker}`,
    `nc -ll -p ${DOWNLOAD} -e sh -c 'dd if=/dev/zero bs=1000000 count=${mb} 2>/dev/null' &`,
    `nc -ll -p ${UPLOAD} -e sh -c 'dd of=/dev/null bs=1000000 count=${mb} iflag=fullblock 2>/dev/null; echo ok' &`,
    `nc -ll -p ${ECHO} -e cat &`,
    'trap "exit 0" TERM; sleep 3600 & wait',
  ].join('\n');
  return { id: POD, image, command: ['sh', '-c', script] };
}

/** The pod's container id, as the agent's `/pods` gives it (`docker://…`, `containerd://…`). */
async function containerIdOf(url: string): Promise<string> {
  const list = (await (await fetch(`${url}/pods`)).json()) as {
    items: Array<{ metadata: { name: string }; status?: { containerStatuses?: Array<{ containerID?: string }> } }>;
  };
  const id = list.items.find((p) => p.metadata.name === POD)?.status?.containerStatuses?.[0]?.containerID;
  if (id === undefined) throw new Error(`the agent's /pods shows no container of pod ${POD}`);
  return id.replace(/^[a-z]+:\/\//, '');
}

/**
 * Issue 23's figures on one real engine, the agent in a process of its own with its real HTTP
 * server, its clients `ws` in this process: exec round trips against the engine's own exec,
 * port-forward throughput both ways against a direct connection in the pod's namespace (and the
 * agent's RSS meanwhile), then sessions and connections at once (streams-load.ts).
 */
export async function streams(which: 'docker' | 'cri', sizes: StreamsSizes): Promise<Row[]> {
  const engine = which === 'docker' ? await dockerLogsEngine() : await criLogsEngine();
  const marker = `kubelet-ts-bench-streams-${process.pid}`;
  let agent: StreamsAgent | undefined;
  try {
    agent = await startStreamsAgent(engine, streamsPod(engine.image, sizes.forwardMB, marker));
    const base = agent.url.replace(/^http/, 'ws');
    const execUrl = (command: readonly string[]) =>
      `${base}/exec/default/${POD}/c0?${command.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&stdout=1&stderr=1`;
    const forwardUrl = (port: number) => `${base}/portForward/default/${POD}?ports=${port}`;
    const id = await containerIdOf(agent.url);
    const baselines = which === 'docker' ? dockerExecBaselines(id) : criExecBaselines(id);
    const how =
      which === 'docker'
        ? "the agent dials through one helper process per pod in the pod's network namespace (nsenter + Node), which hands it each connected socket: the agent relays on its own socket"
        : "the agent relays through containerd's streaming server (CRI PortForward, a WebSocket per connection)";
    const rows: Row[] = [];
    try {
      rows.push(...(await execRoundTrip(engine, sizes, execUrl, baselines)));
      rows.push(
        ...(await portForwardThroughput({
          scenario: STREAMS_SCENARIO,
          label: engine.label,
          how,
          agent,
          forwardUrl,
          ports: { download: DOWNLOAD, upload: UPLOAD },
          podPid: await podProcess(marker),
          megabytes: sizes.forwardMB,
          runs: sizes.forwardRuns,
        })),
      );
      rows.push(
        ...(await streamsLoad({
          scenario: STREAMS_SCENARIO,
          label: engine.label,
          agent,
          execUrl,
          echoUrl: forwardUrl(ECHO),
          how,
          engineWays: [baselines.baseline, ...baselines.references],
          sessions: sizes.sessions,
          settleSeconds: sizes.settleSeconds,
        })),
      );
    } finally {
      baselines.close();
    }
    return rows;
  } finally {
    await agent?.stop();
    await engine.dispose();
  }
}

async function execRoundTrip(
  engine: LogsEngine,
  sizes: StreamsSizes,
  execUrl: (command: readonly string[]) => string,
  baselines: ExecBaselines,
): Promise<Row[]> {
  let protocol = '';
  const ours = async () => {
    const session = await channelSession(execUrl(['true']));
    if (session.status !== 'Success') throw new Error(`${engine.label}: exec true through the agent ended ${session.status}`);
    protocol = session.protocol;
    return session.ms;
  };
  const theirs = () => baselines.baseline.run(['true']);
  // Three of each first, untimed: the agent's code compiled, the engine's paths warm.
  for (let i = 0; i < 3; i++) {
    await eventually(ours, 10);
    await theirs();
    for (const reference of baselines.references) await reference.run(['true']);
  }
  const [oursMs, theirsMs] = [[] as number[], [] as number[]];
  const referencesMs = baselines.references.map(() => [] as number[]);
  for (let run = 0; run < sizes.execRuns; run++) {
    // Who goes first alternates, so that drift over the run favours neither.
    if (run % 2 === 0) {
      oursMs.push(await ours());
      theirsMs.push(await theirs());
    } else {
      theirsMs.push(await theirs());
      oursMs.push(await ours());
    }
    for (const [i, reference] of baselines.references.entries()) referencesMs[i]!.push(await reference.run(['true']));
  }
  const value = summarise(oursMs);
  const baseline = summarise(theirsMs);
  return [
    row({
      scenario: STREAMS_SCENARIO,
      metric: `${engine.label}: exec \`true\` through the agent's /exec (WebSocket, ${protocol}), socket opened → status and close`,
      unit: 'ms',
      value,
      baseline: { name: baselines.baseline.name, value: baseline },
      target: { text: 'ratio ≤ 1.2', met: value.median / baseline.median <= 1.2 },
      note: `p90 ${fmt(p90(oursMs))} ms (the engine's own: ${fmt(p90(theirsMs))} ms); ${sizes.execRuns} runs each, alternating who goes first, after 3 untimed of each; stdout and stderr asked for on both sides; the client is \`ws\` in the bench's process, the agent a process of its own on loopback`,
    }),
    ...baselines.references.map((reference, i) =>
      row({
        scenario: STREAMS_SCENARIO,
        metric: `${engine.label}: the same exec, ${reference.name}`,
        unit: 'ms',
        value: summarise(referencesMs[i]!),
        note: `for reference: where the time goes between the engine and the agent; p90 ${fmt(p90(referencesMs[i]!))} ms`,
      }),
    ),
  ];
}
