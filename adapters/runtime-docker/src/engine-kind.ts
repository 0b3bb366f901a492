import type { ContainerSpec } from '@kubelet-ts/core';
import type { DockerVersion } from './docker-api.js';

/**
 * Which engine serves the Docker API. Podman's Docker-compatible service (`podman system service`)
 * runs this adapter unchanged but for a few answers that differ; the adapter asks `GET /version`
 * once and handles each difference where it arises, commented there:
 *
 * - it lists containers without `HostConfig`, so a sandbox's members are found by inspecting
 *   (`DockerSandboxes.members`);
 * - a container joining a sandbox's network keeps a UTS namespace (and hostname) of its own, where
 *   Docker gives it the sandbox's hostname: it joins the sandbox's UTS namespace too (`create`);
 * - it names images in full (`docker.io/kubelet-ts-test/busybox:1`), where Docker gives back the
 *   name asked for: names are shown in Docker's familiar form (`familiarImageName`);
 * - starting a container in a stopped sandbox starts the sandbox too, where Docker refuses: the
 *   adapter refuses first (`start`);
 * - a name already taken and a call on a container in the wrong state answer 500, not 409
 *   (`translate`, by their words);
 * - a sandbox whose start failed keeps its host ports bound in the service (Podman 4.3): the
 *   adapter warns (`DockerSandboxes.run`).
 * - its events filter names `died` and `remove` where Docker's are `die` and `destroy` (the lines
 *   themselves say `die`, with the same `exitCode` attribute), and its label filter matches
 *   `key=value` only, so our label is checked on each line's attributes (`eventFilters`).
 * - streaming (`DockerStreams`, `DockerSession`): an exec it cannot start ends with 127 and its
 *   words on stderr (Docker: 126, on stdout); as a session ends it may add a line of its own on
 *   stderr (`Error: read unixpacket …: connection reset by peer`), left out; it passes the body
 *   of an attach request on to the process's stdin, so none is sent; it answers a resize with
 *   201; and the half-close of an attach's stdin closes the container's stdin, where Docker ends
 *   the session and leaves it open (without `StdinOnce`).
 * - stats (`DockerStatsSource`, `containerStatsOf`): it sends no `memory.stat`, so the working set
 *   is its usage, page cache included on cgroup v1, with no rss or page faults; a container that
 *   is not running answers with an empty body; the pod's interface is named `network`, with zeros
 *   for a holder on the host's network (Docker names none), and before 4.4 its received and sent
 *   bytes swapped (`statsQuirksOf`). It never pre-samples CPU, so `one-shot` changes nothing there.
 *   All of this is of its stats API, which serves a remote engine: a local one's figures come from
 *   the kernel (`KernelStats`), alike on both.
 *
 * Checked alike on both (test/host-network.test.ts, the v1 contract): a host-network holder
 * (`NetworkMode: host`) and containers joining it with `container:<holder>` share the host's
 * network, and on Podman, through the UTS join above, the host's hostname; `Entrypoint`, and a CPU
 * limit as `CpuPeriod`/`CpuQuota`, are taken and shown back the same.
 */
export type EngineKind = 'docker' | 'podman';

/** Why `spec` cannot be made on `engine` as it asks, or undefined: Podman's compatible API drops `StdinOnce`. */
export function engineRefusal(spec: Pick<ContainerSpec, 'name' | 'stdinOnce'>, engine: EngineKind): string | undefined {
  if (engine !== 'podman' || spec.stdinOnce !== true) return undefined;
  return `create ${spec.name}: stdinOnce cannot be kept on Podman (its Docker-compatible API drops StdinOnce, so stdin would stay open after the first attach); leave stdinOnce out`;
}

/** Podman names itself in `Components` (`Podman Engine`); Docker's `Platform.Name` is `Docker Engine - …` or empty. */
export function engineKindOf(version: DockerVersion): EngineKind {
  const names = [...(version.Components ?? []).map((c) => c.Name), version.Platform?.Name ?? ''];
  return names.some((name) => /podman/i.test(name)) ? 'podman' : 'docker';
}

/**
 * An image name as Docker shows it (its "familiar" form): without the `docker.io/` registry and
 * the `library/` namespace that Podman writes out. `docker.io/library/busybox:1.36` is
 * `busybox:1.36`; names of other registries are unchanged.
 */
export function familiarImageName(name: string): string {
  const match = /^(?:docker\.io|index\.docker\.io)\/(.+)$/.exec(name);
  if (match?.[1] === undefined) return name;
  const rest = match[1];
  return rest.startsWith('library/') && !rest.slice('library/'.length).includes('/') ? rest.slice('library/'.length) : rest;
}
