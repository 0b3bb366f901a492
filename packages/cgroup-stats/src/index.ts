export {
  cgroupMountsOf,
  flatKeyedOf,
  memoryLimitOf,
  numberOf,
  processCgroupsOf,
  type CgroupMount,
  type ProcessCgroups,
} from './cgroup-parse.js';
export { containerStatsOfCgroup, holderNetworkOf, memoryOfCgroup } from './cgroup-figures.js';
export { ContainerRuns, type ContainerProcess, type ContainerRun, type KernelRun } from './container-runs.js';
export { isGone, KernelStats, type CgroupFigures, type ContainerCgroup, type KernelStatsOptions } from './kernel-stats.js';
