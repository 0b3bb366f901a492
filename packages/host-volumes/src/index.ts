// The host side of pod volumes, shared by the runtime adapters that bind host directories (Docker,
// CRI), and the volumes of files the runner writes for them (ConfigMap, Secret, downward API). Kept
// out of core, which does no I/O.
export { podVolumeDir, podVolumePath, removePodVolumes } from './pod-volumes.js';
export { CLAIMS_FOLDER, claimVolumeDir, claimVolumePath, listClaimVolumes, mountSourceDir, removeClaimVolume } from './claim-volumes.js';
export { volumeFilesWritten, writeVolumeFiles, type FilesOwner } from './volume-files.js';
