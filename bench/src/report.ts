import { cpus, totalmem, release } from 'node:os';
import type { Row } from './stats.js';

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly node: string;
  readonly docker?: string;
  readonly containerd?: string;
}

export function describeMachine(docker?: string, containerd?: string): Machine {
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    ...(docker === undefined ? {} : { docker }),
    ...(containerd === undefined ? {} : { containerd }),
  };
}

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

/** The Markdown table of a run: median, p95, baseline, ratio, target. */
export function markdown(rows: readonly Row[], machine: Machine, when: Date): string {
  const lines = [
    '# kubelet-ts benchmark results',
    '',
    `Measured ${when.toISOString()} with \`npm run bench\` on: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Linux ${machine.kernel}, Node.js ${machine.node}${machine.docker === undefined ? '' : `, Docker engine ${machine.docker}`}${machine.containerd === undefined ? '' : `, ${machine.containerd} (CRI)`}. Every baseline was measured in the same run.`,
    '',
    '| scenario | metric | median | p95 | runs | baseline | baseline median | ratio | target | met |',
    '|---|---|---:|---:|---:|---|---:|---:|---|:---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.scenario} | ${r.metric} | ${fmt(r.value.median)} ${r.unit} | ${fmt(r.value.p95)} ${r.unit} | ${r.value.runs} | ${r.baseline?.name ?? ''} | ${r.baseline === undefined ? '' : `${fmt(r.baseline.value.median)} ${r.unit}`} | ${r.ratio === undefined ? '' : r.ratio.toFixed(2)} | ${r.target?.text ?? ''} | ${r.target === undefined ? '' : r.target.met ? 'yes' : '**no**'} |`,
    );
  }
  const notes = rows.filter((r) => r.note !== undefined);
  if (notes.length > 0) {
    lines.push('', 'Notes:', '');
    for (const r of notes) lines.push(`- ${r.scenario}, ${r.metric}: ${r.note}`);
  }
  return `${lines.join('\n')}\n`;
}
