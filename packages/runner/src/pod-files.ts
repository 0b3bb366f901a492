import {
  KubeletError,
  NO_OBJECTS,
  podVolumeFiles,
  type DesiredPod,
  type Logger,
  type Mount,
  type ObjectLookup,
  type PodVolumeFiles,
  type SpecContext,
  type Volume,
  type VolumeFile,
} from '@kubelet-ts/core';
import { removePodVolumes, volumeFilesWritten, writeVolumeFiles } from '@kubelet-ts/host-volumes';

/**
 * The volumes of files of the pods (ConfigMap, Secret, downward API): written under `root` as a
 * container is made, bound in its place, and rewritten while the pod runs when what they hold
 * changes (a ConfigMap given anew, a label changed), as the kubelet updates them; removed with
 * the pod. Without a root, a pod that has one waits, saying which option gives it.
 */
export class PodFiles {
  /** What was last written, by `<pod>/<volume>`: the same payload again writes nothing. */
  private readonly digests = new Map<string, string>();
  /** One write at a time per pod volume: a refresh and a create never interleave in one directory. */
  private readonly writing = new Map<string, Promise<unknown>>();
  /** Why a pod's files were last kept as they were, by pod: said once, not at every refresh. */
  private readonly kept = new Map<string, string>();

  constructor(
    private readonly root: string | undefined,
    private readonly logger: Logger,
  ) {}

  /** Writes `files` and returns `mounts` with each volume of files bound from its directory. */
  async mount(podId: string, mounts: readonly Mount[], files: PodVolumeFiles): Promise<Mount[]> {
    const root = this.root;
    if (root === undefined)
      throw new KubeletError(
        'Unsupported',
        'this agent has no directory for the files of ConfigMap, Secret and downward API volumes: start it with --volume-files-dir (KubeletOptions.volumeFilesDir)',
      );
    const out: Mount[] = [];
    for (const m of mounts) {
      const written = m.files === true ? files.volumes.get(m.volume) : undefined;
      if (written === undefined) {
        out.push(m);
        continue;
      }
      const dir = await this.write(root, podId, m.volume, files, written);
      out.push({ ...m, hostPath: dir, readOnly: true });
    }
    return out;
  }

  /**
   * Rewrites the volumes of files of `pods` that were written (by this process, or before its
   * restart) with what they hold now. A volume whose object is now missing keeps its last files,
   * as the kubelet keeps them, said once; the next refresh tries again.
   */
  async refresh(
    pods: readonly DesiredPod[],
    contextOf: (pod: DesiredPod) => SpecContext,
    objectsOf: (source: string) => ObjectLookup | undefined,
  ): Promise<void> {
    const root = this.root;
    if (root === undefined) return;
    for (const pod of pods) {
      const volumes = pod.manifest.volumes.filter((v) => v.files !== undefined);
      if (volumes.length === 0) continue;
      const id = pod.manifest.id;
      const present: Volume[] = [];
      for (const v of volumes) if (this.digests.has(`${id}/${v.name}`) || (await volumeFilesWritten(root, id, v.name))) present.push(v);
      if (present.length === 0) continue;
      let files: PodVolumeFiles;
      try {
        files = podVolumeFiles(pod.manifest, present, contextOf(pod), objectsOf(pod.source) ?? NO_OBJECTS);
      } catch (error) {
        const why = (error as Error).message;
        if (this.kept.get(id) !== why) this.logger.warn({ podId: id, err: error }, `volume files of ${id} kept as they were: ${why}`);
        this.kept.set(id, why);
        continue;
      }
      this.kept.delete(id);
      for (const [volume, written] of files.volumes) {
        await this.write(root, id, volume, files, written).catch((error: unknown) =>
          this.logger.warn(
            { podId: id, volume, err: error },
            `volume ${volume} of ${id} could not be rewritten: ${(error as Error).message}`,
          ),
        );
      }
    }
  }

  /** The pod is gone: its volumes of files go with it. */
  async remove(podId: string): Promise<void> {
    for (const key of this.digests.keys()) if (key.startsWith(`${podId}/`)) this.digests.delete(key);
    this.kept.delete(podId);
    if (this.root !== undefined) await removePodVolumes(this.root, podId);
  }

  private async write(root: string, podId: string, volume: string, files: PodVolumeFiles, written: readonly VolumeFile[]): Promise<string> {
    const key = `${podId}/${volume}`;
    const before = this.writing.get(key) ?? Promise.resolve();
    const next = before
      .catch(() => undefined)
      .then(() => writeVolumeFiles(root, podId, volume, written, files.owner, this.digests.get(key)));
    this.writing.set(key, next);
    try {
      const result = await next;
      this.digests.set(key, result.digest);
      if (result.changed) this.logger.debug({ podId, volume, files: written.length }, 'volume files written');
      return result.dir;
    } finally {
      if (this.writing.get(key) === next) this.writing.delete(key);
    }
  }
}
