/** What the fleet's parent (`fleet.ts`) and its processes (`fleet-child.ts`) say to each other over IPC. */

/** The env variable that tells one rollout's containers from another's. */
export const GENERATION = 'FLEET_GENERATION';
export const CONTAINERS_PER_POD = 2;

export type FleetAsk =
  /** Make hosts `from` to `to` - 1 and start their agents on `endpoint`. */
  | { readonly type: 'start'; readonly endpoint: string; readonly from: number; readonly to: number }
  /** Each host's time from `sent` to both its containers of `generation` running. */
  | { readonly type: 'converge'; readonly generation: string; readonly sent: bigint; readonly timeoutMs: number }
  /** RSS and heap now, after full GCs, less before the first host was made. */
  | { readonly type: 'memory' }
  | { readonly type: 'close' };

export type FleetAnswer =
  | { readonly type: 'started' }
  | { readonly type: 'converged'; readonly times: number[] }
  | { readonly type: 'memory'; readonly rss: number; readonly heap: number }
  | { readonly type: 'closed' }
  | { readonly type: 'failed'; readonly message: string };
