// The host side of pod volumes, shared by the runtime adapters that bind host directories (Docker,
// CRI). Kept out of core, which does no I/O, and out of the runner, which binds nothing itself.
export { podVolumeDir, removePodVolumes } from './pod-volumes.js';
export { CLAIMS_FOLDER, claimVolumeDir, listClaimVolumes, mountSourceDir, removeClaimVolume } from './claim-volumes.js';
