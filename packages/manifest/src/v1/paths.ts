/**
 * Where a field of the domain manifest was written in a v1 Pod. Validation walks the domain form;
 * its errors are then told with the path the author wrote (`spec.containers[0].args[1]`, not
 * `containers[0].command[1]`), and a conversion to v1beta1 names the v1 field it cannot carry.
 */
const CONTAINER_FIELD: ReadonlyArray<readonly [RegExp, string]> = [
  [/^command(?=$|[.[])/, 'args'],
  [/^entrypoint(?=$|[.[])/, 'command'],
  [/^memory$/, 'resources.limits.memory'],
  [/^memoryRequest$/, 'resources.requests.memory'],
  [/^cpu$/, 'resources.requests.cpu'],
  [/^cpuLimitMillis$/, 'resources.limits.cpu'],
];
const METADATA = /^(id|uuid|namespace|labels|annotations|deletionTimestamp|deletionGracePeriodSeconds)(?=$|[.[])/;
const METADATA_NAME: Readonly<Record<string, string>> = {
  id: 'name',
  uuid: 'uid',
  deletionTimestamp: 'deletionTimestamp',
  deletionGracePeriodSeconds: 'deletionGracePeriodSeconds',
  namespace: 'namespace',
  labels: 'labels',
  annotations: 'annotations',
};

export function v1PathOf(domainPath: string): string {
  if (domainPath === '') return '';
  const meta = METADATA.exec(domainPath);
  if (meta !== null) return `metadata.${METADATA_NAME[meta[1] ?? ''] ?? ''}${domainPath.slice(meta[0].length)}`;
  const pullSecret = /^imagePullSecrets\[(\d+)\]$/.exec(domainPath);
  if (pullSecret !== null) return `spec.imagePullSecrets[${pullSecret[1]}].name`;
  const claim = /^volumes\[(\d+)\]\.claim(\.name|\.readOnly)?$/.exec(domainPath);
  if (claim !== null) return `spec.volumes[${claim[1]}].persistentVolumeClaim${claim[2] === '.name' ? '.claimName' : (claim[2] ?? '')}`;
  const container = /^(initContainers|containers)\[(\d+)\]\.?/.exec(domainPath);
  if (container === null) return `spec.${domainPath}`;
  const rest = domainPath.slice(container[0].length);
  const rule = CONTAINER_FIELD.find(([pattern]) => pattern.test(rest));
  const field = rule === undefined ? rest : rest.replace(rule[0], rule[1]);
  return `spec.${container[1]}[${container[2]}]${field === '' ? '' : `.${field}`}`;
}
