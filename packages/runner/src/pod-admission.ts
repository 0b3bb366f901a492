import { admissionRefusal, admittedUse, withPod, type AdmissionNode, type AdmissionRefusal, type DesiredPod } from '@kubelet-ts/core';

/** A pod the node's admission refused: it never runs, and its status is `Failed` with the refusal. */
export interface RefusedPod {
  readonly pod: DesiredPod;
  readonly refusal: AdmissionRefusal;
}

/**
 * The node's admission, as the kubelet's (`HandlePodAdditions` → `canAdmitPod`): each new pod is
 * admitted or refused once, in the order the sources give them, against the pods admitted before
 * it. The decision is kept for as long as the pod (its source, id and uid) stays: an admitted pod
 * is never refused later (a pod added after it waits its turn, not the other way round), and a
 * refused one is `Failed` for good, even when room is made, as the kubelet never admits a rejected
 * pod again. A pod made again with a new uid is a new pod, and is decided again.
 */
export class PodAdmission {
  /** Per pod key: null when admitted, else why not. */
  private readonly decided = new Map<string, AdmissionRefusal | null>();

  constructor(
    private readonly node: AdmissionNode,
    /** Told each refusal once, when it is decided. */
    private readonly onRefused: (refused: RefusedPod) => void = () => {},
  ) {}

  /** Splits `pods` into those to run (in their order) and those refused; forgets the pods no longer given. */
  decide(pods: readonly DesiredPod[]): { admitted: DesiredPod[]; refused: RefusedPod[] } {
    const keys = pods.map(keyOf);
    let used = admittedUse(pods.filter((_, i) => this.decided.get(keys[i]!) === null).map((p) => p.manifest));
    const fresh: RefusedPod[] = [];
    pods.forEach((pod, i) => {
      if (this.decided.has(keys[i]!)) return;
      const refusal = admissionRefusal(pod.manifest, used, this.node);
      this.decided.set(keys[i]!, refusal ?? null);
      if (refusal !== undefined) return void fresh.push({ pod, refusal });
      used = withPod(used, pod.manifest);
    });
    const present = new Set(keys);
    for (const key of [...this.decided.keys()]) if (!present.has(key)) this.decided.delete(key);
    const admitted: DesiredPod[] = [];
    const refused: RefusedPod[] = [];
    pods.forEach((pod, i) => {
      const refusal = this.decided.get(keys[i]!);
      if (refusal === null || refusal === undefined) admitted.push(pod);
      else refused.push({ pod, refusal });
    });
    for (const r of fresh) this.onRefused(r);
    return { admitted, refused };
  }
}

const keyOf = ({ source, manifest }: DesiredPod): string => `${source}\n${manifest.id}\n${manifest.uuid ?? ''}`;
