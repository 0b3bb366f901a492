// Fixtures of the real-engine suites, by name.
export { assertEngine, dockerSocketPath, independentDocker, removeLabelled } from './engine.js';
export { buildTestImages, TEST_IMAGES, type TestImages } from './images.js';
export { EtcdServer, freePort, type EtcdServerOptions } from './etcd-server.js';
export { TestCertificates, type CertificateAuthority, type CertificatePair } from './certificates.js';
export { reapEngineDebris, stopDockerEngine, type StoppedEngine } from './engine-restart.js';
export { TcpGate } from './tcp-gate.js';
export { assertContainerd, criCgroupParent, criEndpoint } from './containerd.js';
export { busyboxPodNetwork } from './pod-network.js';
export { assertPodman, independentPodman, podmanHost, removePodmanLabelled } from './podman.js';
export { enginesEnv } from './engines-env.js';
export { TempDirs } from './temp-dirs.js';
