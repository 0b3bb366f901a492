// Fixtures of the real-engine suites, by name.
export { assertEngine, dockerSocketPath, independentDocker, removeLabelled } from './engine.js';
export { buildTestImages, TEST_IMAGES, type TestImages } from './images.js';
export { EtcdServer, freePort, type EtcdServerOptions } from './etcd-server.js';
export { TestCertificates, type CertificateAuthority, type CertificatePair, type PairOptions } from './certificates.js';
export { configureTestcontainers, LoopbackContainer, TESTKIT_LABEL } from './containers.js';
export { localImage, type LocalImageOptions } from './local-images.js';
export { HttpFileServer } from './http-file-server.js';
export { RegistryServer, removePulledImage, type RegistryServerOptions } from './registry-server.js';
export { PrometheusServer, type PrometheusSample, type PrometheusScrapeJob, type PrometheusServerOptions } from './prometheus-server.js';
export {
  buildControlPlane,
  buildMetricsServer,
  type BuildControlPlaneOptions,
  type ControlPlaneBinaries,
  type MetricsServerBinary,
} from './control-plane-binaries.js';
export { METRICS_SERVER_PORT, type MetricsServerOptions, type StartedMetricsServer } from './metrics-server.js';
export {
  kubeconfigYaml,
  SERVICE_CLUSTER_IP_RANGE,
  startControlPlane,
  type ControlPlaneComponent,
  type ControlPlaneOptions,
  type StartedControlPlane,
} from './control-plane.js';
export { reapEngineDebris, stopDockerEngine, type StoppedEngine } from './engine-restart.js';
export { TcpGate } from './tcp-gate.js';
export { assertContainerd, criCgroupParent, criEndpoint } from './containerd.js';
export { busyboxPodNetwork } from './pod-network.js';
export { startRealKubelet, type RealKubeletOptions, type StartedRealKubelet } from './real-kubelet.js';
export { assertPodman, independentPodman, podmanHost, removePodmanLabelled } from './podman.js';
export { enginesEnv } from './engines-env.js';
export { TempDirs } from './temp-dirs.js';
