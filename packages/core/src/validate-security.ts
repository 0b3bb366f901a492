import { describeValue, isRecord } from './field-checks.js';
import type { ContainerSecurityContext, PodSecurityContext, SecurityProfile, SELinuxOptions, SharedSecurity, Sysctl } from './security.js';
import { normalSysctlName, SYSCTL_NAME, sysctlAllowed, sysctlNamespace } from './sysctls.js';
import { ProbeChecks } from './validate-probe.js';

/** The host access a manifest is checked against (see `HostAccess`), every power said. */
export interface ContainerCheckOptions {
  readonly allowHostMounts: boolean;
  readonly allowHostNetwork: boolean;
  readonly allowPrivileged: boolean;
  /** The host enforces AppArmor, so a profile other than `Unconfined` can be applied. */
  readonly appArmor: boolean;
  /** This node's labels, for a pod's `nodeSelector` and node affinity (see `HostAccess.nodeLabels`). */
  readonly nodeLabels?: Readonly<Record<string, string>>;
  /** Sysctls allowed beyond the safe set (see `HostAccess.allowedUnsafeSysctls`). */
  readonly allowedUnsafeSysctls?: readonly string[];
  /**
   * A pod's `nodeSelector` and node affinity are read but not matched against `nodeLabels`: the
   * agent's admission matches them and reports a pod for another node as `Failed` (`NodeAffinity`),
   * as a source of cluster pods wants. Default false: a standalone source refuses it by field.
   */
  readonly placementAtAdmission?: boolean;
  /**
   * The pod's source asks an API server for its tokens, so a `serviceAccountToken` projection is
   * read. Default false: refused by field, as nothing could issue the token.
   */
  readonly serviceAccountTokens?: boolean;
}

/** The host namespaces a pod joins, which its sysctls must not reach into. */
export interface PodHostNamespaces {
  readonly hostNetwork: boolean;
  readonly hostIPC: boolean;
}

const SYSCTL_FIELDS = new Set(['name', 'value']);

const SHARED_FIELDS = ['runAsUser', 'runAsGroup', 'runAsNonRoot', 'seccompProfile', 'appArmorProfile', 'seLinuxOptions'];
const POD_FIELDS = new Set([...SHARED_FIELDS, 'supplementalGroups', 'fsGroup', 'sysctls']);
const CONTAINER_FIELDS = new Set([...SHARED_FIELDS, 'privileged', 'allowPrivilegeEscalation', 'readOnlyRootFilesystem', 'capabilities']);
const PROFILE_FIELDS = new Set(['type', 'localhostProfile']);
const PROFILE_TYPES = ['RuntimeDefault', 'Unconfined', 'Localhost'] as const;
const SELINUX_FIELDS = ['user', 'role', 'type', 'level'] as const;
const CAPABILITY_FIELDS = new Set(['add', 'drop']);
/** Linux's largest uid and gid that Kubernetes accepts (`runAsUser` is an int64 of at most 2³¹−1). */
const MAX_ID = 2_147_483_647;
/** The capabilities of Linux 6.x, without `CAP_` (capabilities(7)). */
// biome-ignore format: a table
const CAPABILITIES = new Set([
  'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP',
  'LINUX_IMMUTABLE', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER',
  'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE',
  'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP',
  'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ', 'PERFMON', 'BPF',
  'CHECKPOINT_RESTORE',
]);
/** A profile name of the host: a relative path, no `..`, nothing a shell or an engine option would read otherwise. */
const LOCALHOST_PROFILE = /^(?!\/)(?!.*(^|\/)\.\.(\/|$))[A-Za-z0-9._/-]{1,253}$/;

/** The checks of a pod's and a container's securityContext, for the container and manifest checks. */
export class SecurityChecks extends ProbeChecks {
  constructor(
    writtenAs: ConstructorParameters<typeof ProbeChecks>[0],
    protected readonly checks: ContainerCheckOptions,
  ) {
    super(writtenAs);
  }

  protected podSecurity(input: unknown, path: string, host: PodHostNamespaces): PodSecurityContext | undefined {
    if (input == null) return undefined;
    const s = this.record(input, path, POD_FIELDS);
    if (s === undefined) return undefined;
    const shared = this.shared(s, path);
    const supplementalGroups = (this.list(s['supplementalGroups'], `${path}.supplementalGroups`) ?? []).map((g, i) =>
      this.integer(g, `${path}.supplementalGroups[${i}]`, 0, MAX_ID),
    );
    const fsGroup = s['fsGroup'] == null ? undefined : this.integer(s['fsGroup'], `${path}.fsGroup`, 0, MAX_ID);
    const sysctls = this.sysctls(s['sysctls'], `${path}.sysctls`, host);
    const groups = supplementalGroups.filter((g): g is number => g !== undefined);
    return compact({
      ...shared,
      ...(groups.length === 0 ? {} : { supplementalGroups: groups }),
      ...(fsGroup === undefined ? {} : { fsGroup }),
      ...(sysctls.length === 0 ? {} : { sysctls }),
    });
  }

  /**
   * `securityContext.sysctls`, as the kubelet admits them: each of a namespace the pod has of its
   * own (`net.*` without hostNetwork, the IPC ones without hostIPC), safe or allowed by
   * `--allowed-unsafe-sysctls`, once each; a name with `/` separators is kept with `.`.
   */
  private sysctls(input: unknown, path: string, host: PodHostNamespaces): Sysctl[] {
    const out: Sysctl[] = [];
    const seen = new Set<string>();
    for (const [i, raw] of (this.list(input, path) ?? []).entries()) {
      const at = `${path}[${i}]`;
      const entry = this.record(raw, at, SYSCTL_FIELDS);
      if (entry === undefined) continue;
      const written = this.string(entry['name'], `${at}.name`, true);
      const value = this.string(entry['value'], `${at}.value`, true);
      if (written === undefined || value === undefined) continue;
      if (/[\x00-\x1f]/.test(value)) {
        this.fail(`${at}.value`, `must be one line without control characters, got ${describeValue(value)}`);
        continue;
      }
      if (!SYSCTL_NAME.test(written) || written.length > 253) {
        this.fail(`${at}.name`, `must be a sysctl name such as net.ipv4.ip_local_port_range, got ${describeValue(written)}`);
        continue;
      }
      const name = normalSysctlName(written);
      const namespace = sysctlNamespace(name);
      if (seen.has(name)) this.fail(`${at}.name`, `${name} is set twice`);
      else if (namespace === undefined)
        this.fail(`${at}.name`, `${name} is the node's, not the pod's: only sysctls of the pod's network and IPC namespaces can be set`);
      else if (namespace === 'net' && host.hostNetwork)
        this.fail(`${at}.name`, `${name} would change the host's network, as the pod has hostNetwork: true; set it on the host instead`);
      else if (namespace === 'ipc' && host.hostIPC)
        this.fail(`${at}.name`, `${name} would change the host's IPC namespace, as the pod has hostIPC: true; set it on the host instead`);
      else if (!sysctlAllowed(name, this.checks.allowedUnsafeSysctls))
        this.fail(
          `${at}.name`,
          `${name} is not one of the kubelet's safe sysctls; run the agent with --allowed-unsafe-sysctls ${name} (allowedUnsafeSysctls) to accept it`,
        );
      else out.push({ name, value });
      seen.add(name);
    }
    return out;
  }

  protected containerSecurity(input: unknown, path: string): ContainerSecurityContext | undefined {
    if (input == null) return undefined;
    const s = this.record(input, path, CONTAINER_FIELDS);
    if (s === undefined) return undefined;
    const shared = this.shared(s, path);
    const privileged = this.boolean(s['privileged'], `${path}.privileged`);
    const escalation = this.boolean(s['allowPrivilegeEscalation'], `${path}.allowPrivilegeEscalation`);
    const readOnly = this.boolean(s['readOnlyRootFilesystem'], `${path}.readOnlyRootFilesystem`);
    const capabilities = this.capabilities(s['capabilities'], `${path}.capabilities`);
    if (privileged === true && !this.checks.allowPrivileged)
      this.fail(
        `${path}.privileged`,
        'true gives the container every device and capability of the host, which this agent refuses; run it with --allow-privileged (allowPrivileged) to accept it, or add only the capabilities it needs (capabilities.add)',
      );
    // As Kubernetes validates a container: no_new_privs cannot hold for a container that has every privilege.
    if (escalation === false && privileged === true)
      this.fail(`${path}.allowPrivilegeEscalation`, 'cannot be false in a privileged container; leave it out');
    if (escalation === false && capabilities?.add?.includes('SYS_ADMIN'))
      this.fail(`${path}.allowPrivilegeEscalation`, 'cannot be false when capabilities.add has SYS_ADMIN; leave one out');
    return compact({
      ...shared,
      ...(privileged === undefined ? {} : { privileged }),
      ...(escalation === undefined ? {} : { allowPrivilegeEscalation: escalation }),
      ...(readOnly === undefined ? {} : { readOnlyRootFilesystem: readOnly }),
      ...(capabilities === undefined ? {} : { capabilities }),
    });
  }

  private shared(s: Record<string, unknown>, path: string): SharedSecurity {
    const user = s['runAsUser'] == null ? undefined : this.integer(s['runAsUser'], `${path}.runAsUser`, 0, MAX_ID);
    const group = s['runAsGroup'] == null ? undefined : this.integer(s['runAsGroup'], `${path}.runAsGroup`, 0, MAX_ID);
    const nonRoot = this.boolean(s['runAsNonRoot'], `${path}.runAsNonRoot`);
    if (nonRoot === true && user === 0)
      this.fail(`${path}.runAsNonRoot`, 'is true while runAsUser is 0 (root); give a runAsUser other than 0, or leave runAsNonRoot out');
    // A Localhost profile is a file under the agent's seccomp directory (see `SpecContext.seccompProfileRoot`).
    const seccomp = this.profile(s['seccompProfile'], `${path}.seccompProfile`);
    const appArmor = this.profile(s['appArmorProfile'], `${path}.appArmorProfile`);
    if (appArmor !== undefined) this.appArmorHost(appArmor, `${path}.appArmorProfile`);
    const seLinux = this.seLinux(s['seLinuxOptions'], `${path}.seLinuxOptions`);
    return {
      ...(user === undefined ? {} : { runAsUser: user }),
      ...(group === undefined ? {} : { runAsGroup: group }),
      ...(nonRoot === undefined ? {} : { runAsNonRoot: nonRoot }),
      ...(seccomp === undefined ? {} : { seccompProfile: seccomp }),
      ...(appArmor === undefined ? {} : { appArmorProfile: appArmor }),
      ...(seLinux === undefined ? {} : { seLinuxOptions: seLinux }),
    };
  }

  /** As the kubelet admits a pod: an AppArmor profile other than Unconfined needs a host that enforces AppArmor. */
  private appArmorHost(profile: SecurityProfile, path: string): void {
    if (profile.type === 'Unconfined' || this.checks.appArmor) return;
    this.fail(
      path,
      `${profile.type} cannot be applied: this host does not enforce AppArmor (/sys/module/apparmor/parameters/enabled is not Y); run the pod on a host with AppArmor, or give type Unconfined`,
    );
  }

  private profile(input: unknown, path: string): SecurityProfile | undefined {
    if (input == null) return undefined;
    const p = this.record(input, path, PROFILE_FIELDS);
    if (p === undefined) return undefined;
    if (p['type'] == null) return this.fail(`${path}.type`, `is required (${PROFILE_TYPES.join(', ')})`);
    const type = this.oneOf(p['type'], `${path}.type`, PROFILE_TYPES);
    const name =
      p['localhostProfile'] == null || p['localhostProfile'] === ''
        ? undefined
        : this.string(p['localhostProfile'], `${path}.localhostProfile`, false);
    if (type === undefined) return undefined;
    if (type === 'Localhost' && name === undefined) return this.fail(`${path}.localhostProfile`, 'is required with type Localhost');
    if (type !== 'Localhost' && name !== undefined) return this.fail(`${path}.localhostProfile`, `must be left out with type ${type}`);
    if (name !== undefined && !LOCALHOST_PROFILE.test(name))
      return this.fail(`${path}.localhostProfile`, `must be a relative name without "..", got ${JSON.stringify(name.slice(0, 70))}`);
    return name === undefined ? { type } : { type, localhostProfile: name };
  }

  private seLinux(input: unknown, path: string): SELinuxOptions | undefined {
    if (input == null) return undefined;
    const o = this.record(input, path, new Set(SELINUX_FIELDS));
    if (o === undefined) return undefined;
    const out: Record<string, string> = {};
    for (const key of SELINUX_FIELDS) {
      const v = o[key] == null || o[key] === '' ? undefined : this.string(o[key], `${path}.${key}`, false);
      if (v !== undefined && !/^[A-Za-z0-9_.:,-]{1,255}$/.test(v))
        this.fail(`${path}.${key}`, `is not an SELinux name, got ${JSON.stringify(v.slice(0, 70))}`);
      else if (v !== undefined) out[key] = v;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }

  /** Names upper-cased and without `CAP_`, as the engines take them; `ALL` only where it means something (drop, or add). */
  private capabilities(input: unknown, path: string): ContainerSecurityContext['capabilities'] {
    if (input == null) return undefined;
    const c = this.record(input, path, CAPABILITY_FIELDS);
    if (c === undefined) return undefined;
    const names = (key: 'add' | 'drop'): string[] =>
      (this.list(c[key], `${path}.${key}`) ?? []).flatMap((raw, i) => {
        const s = this.string(raw, `${path}.${key}[${i}]`, true);
        if (s === undefined) return [];
        const name = s.toUpperCase().replace(/^CAP_/, '');
        if (name !== 'ALL' && !CAPABILITIES.has(name)) {
          this.fail(
            `${path}.${key}[${i}]`,
            `is not a Linux capability, got ${JSON.stringify(s.slice(0, 70))} (write NET_ADMIN, SYS_TIME, … or ALL)`,
          );
          return [];
        }
        return [name];
      });
    const add = names('add');
    const drop = names('drop');
    return compact({ ...(add.length === 0 ? {} : { add }), ...(drop.length === 0 ? {} : { drop }) });
  }

  protected boolean(input: unknown, path: string): boolean | undefined {
    if (input == null) return undefined;
    if (typeof input === 'boolean') return input;
    return this.fail(path, `must be true or false, got ${describeValue(input)}`);
  }
}

/** `undefined` for an object with nothing in it: a securityContext that says nothing is left out. */
function compact<T extends object>(o: T): T | undefined {
  return isRecord(o) && Object.keys(o).length === 0 ? undefined : o;
}
