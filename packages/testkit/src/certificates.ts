import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate and its key, as files (for flags) and as PEM text (for node's `tls` options). */
export interface CertificatePair {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

/** A CA: its certificate (what a peer trusts) and its key (what signs the pairs). */
export interface CertificateAuthority extends CertificatePair {}

/**
 * Certificates made for one test run with the machine's `openssl` (no npm dependency), in a temp
 * dir of their own: a CA, a server pair for `127.0.0.1`/`localhost`/`::1`, a client pair, an
 * expired client pair and an expired server pair (signed by the CA), and a second, unrelated CA
 * with a server and a client pair of its own (the "wrong CA" cases). P-256 keys: quick to make.
 */
export class TestCertificates {
  private constructor(
    readonly dir: string,
    readonly ca: CertificateAuthority,
    readonly server: CertificatePair,
    readonly client: CertificatePair,
    readonly expiredClient: CertificatePair,
    readonly expiredServer: CertificatePair,
    readonly otherCa: CertificateAuthority,
    readonly otherServer: CertificatePair,
    readonly otherClient: CertificatePair,
  ) {}

  static async create(): Promise<TestCertificates> {
    const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-certs-'));
    try {
      const ca = await makeCa(dir, 'ca');
      const otherCa = await makeCa(dir, 'other-ca');
      return new TestCertificates(
        dir,
        ca,
        await makePair(dir, 'server', ca, { server: true }),
        await makePair(dir, 'client', ca, {}),
        await makePair(dir, 'expired-client', ca, { expired: true }),
        await makePair(dir, 'expired-server', ca, { server: true, expired: true }),
        otherCa,
        await makePair(dir, 'other-server', otherCa, { server: true }),
        await makePair(dir, 'other-client', otherCa, {}),
      );
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** A further pair signed by the CA, e.g. to replace the server's and see it reloaded. */
  async issue(name: string, options: PairOptions = {}): Promise<CertificatePair> {
    return makePair(this.dir, name, this.ca, options);
  }

  async destroy(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** What a pair is for; by default a client pair whose subject is `CN=<name>`. */
export interface PairOptions {
  /** A server pair (serverAuth), for `127.0.0.1`, `::1` and `localhost` unless `sans` says otherwise. */
  readonly server?: boolean;
  /** Already expired when made. */
  readonly expired?: boolean;
  /** The subject's common name (default: the pair's name) and organizations (Kubernetes reads them as user and groups). */
  readonly commonName?: string;
  readonly organizations?: readonly string[];
  /** A server pair's names: `IP:…` and `DNS:…` entries. */
  readonly sans?: readonly string[];
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** A CA of its own in `dir` (`<name>.pem`, `<name>-key.pem`), valid for two days. */
export async function makeCa(dir: string, name: string): Promise<CertificateAuthority> {
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  await openssl(['req', '-x509', ...KEY, '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', `/CN=kubelet-ts test ${name}`]);
  return read(certFile, keyFile);
}

/** A pair signed by `ca`, in `dir` (`<name>.pem`, `<name>-key.pem`). */
export async function makePair(dir: string, name: string, ca: CertificateAuthority, options: PairOptions = {}): Promise<CertificatePair> {
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await writeFile(
    ext,
    options.server === true
      ? `subjectAltName=${(options.sans ?? ['IP:127.0.0.1', 'IP:::1', 'DNS:localhost']).join(',')}\nextendedKeyUsage=serverAuth\n`
      : 'extendedKeyUsage=clientAuth\n',
  );
  const subject = [...(options.organizations ?? []).map((o) => `/O=${o}`), `/CN=${options.commonName ?? name}`].join('');
  await openssl(['req', ...KEY, '-keyout', keyFile, '-out', csr, '-subj', subject]);
  // -days -1: valid until a day before it was made, i.e. already expired (openssl 3.0's x509 has
  // no -not_after; the notBefore is now, so the verifier reports it expired, not "not yet valid").
  const days = options.expired === true ? '-1' : '2';
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    // A random serial, not a serial file: pairs of one CA may be signed at once.
    '-set_serial',
    `0x${randomBytes(16).toString('hex')}`,
    '-days',
    days,
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  return read(certFile, keyFile);
}

async function read(certFile: string, keyFile: string): Promise<CertificatePair> {
  return { certFile, keyFile, cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
}

async function openssl(args: readonly string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(
      `openssl ${args.slice(0, 2).join(' ')} failed (is openssl installed? apt-get install -y openssl): ${stderr.trim() || String(error)}`,
      { cause: error },
    );
  }
}
