/** A v1 Service as the API lists it (the fields its variables read). */
export interface ApiService {
  readonly metadata: { readonly name: string; readonly namespace: string; readonly resourceVersion?: string };
  readonly spec?: {
    readonly clusterIP?: string;
    readonly ports?: ReadonlyArray<{ readonly name?: string; readonly port: number; readonly protocol?: string }>;
  };
}

/** Where the pods reach the API server, when not at the `kubernetes` Service's ClusterIP. */
export interface PodApiServer {
  readonly host: string;
  readonly port: number;
}

/** The API server's Service: its variables go to every container (the kubelet's `masterServices`). */
export const MASTER_SERVICE_NAME = 'kubernetes';

/**
 * The variables of `services`, as the kubelet's `envvars.FromServices` makes them: for each with a
 * ClusterIP, `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT` (its first port), one
 * `<NAME>_SERVICE_PORT_<PORT NAME>` per named port, and Docker's link variables (`<NAME>_PORT`,
 * and `<NAME>_PORT_<port>_<PROTO>` with `_PROTO`, `_PORT`, `_ADDR`); a name upper-cased, `-` as `_`.
 */
export function serviceVariablesOf(services: readonly ApiService[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const service of [...services].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const ip = service.spec?.clusterIP;
    const ports = service.spec?.ports ?? [];
    if (ip === undefined || ip === '' || ip === 'None' || ports.length === 0) continue;
    const prefix = variableName(service.metadata.name);
    env[`${prefix}_SERVICE_HOST`] = ip;
    env[`${prefix}_SERVICE_PORT`] = String(ports[0]!.port);
    for (const p of ports)
      if (p.name !== undefined && p.name !== '') env[`${prefix}_SERVICE_PORT_${variableName(p.name)}`] = String(p.port);
    ports.forEach((p, i) => {
      const protocol = (p.protocol ?? 'TCP').toLowerCase();
      const address = `${protocol}://${ip.includes(':') ? `[${ip}]` : ip}:${p.port}`;
      if (i === 0) env[`${prefix}_PORT`] = address;
      const at = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
      env[at] = address;
      env[`${at}_PROTO`] = protocol;
      env[`${at}_PORT`] = String(p.port);
      env[`${at}_ADDR`] = ip;
    });
  }
  return env;
}

/**
 * The API server's variables: of its `kubernetes` Service in `default`, or, with `reachable`, of
 * that Service as if its address were where the pods reach the API server (its one port `https`),
 * so that an in-cluster client (client-go's `InClusterConfig` reads `KUBERNETES_SERVICE_HOST` and
 * `_PORT`) dials an address that answers, not a ClusterIP that nothing on this host serves.
 */
export function masterVariables(services: readonly ApiService[], reachable: PodApiServer | undefined): Record<string, string> {
  const master = services.find((s) => s.metadata.namespace === 'default' && s.metadata.name === MASTER_SERVICE_NAME);
  if (reachable === undefined) return master === undefined ? {} : serviceVariablesOf([master]);
  return serviceVariablesOf([
    {
      metadata: { name: MASTER_SERVICE_NAME, namespace: 'default' },
      spec: { clusterIP: reachable.host, ports: [{ name: 'https', port: reachable.port, protocol: 'TCP' }] },
    },
  ]);
}

/** The variables of a namespace's services but the API server's, which `masterVariables` gives. */
export function linkVariables(services: readonly ApiService[], namespace: string): Record<string, string> {
  return serviceVariablesOf(
    services.filter((s) => s.metadata.namespace === namespace && !(namespace === 'default' && s.metadata.name === MASTER_SERVICE_NAME)),
  );
}

function variableName(name: string): string {
  return name.replaceAll('-', '_').toUpperCase();
}
