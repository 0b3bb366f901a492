import { execFile, spawn } from 'node:child_process';

/** `kubectl` with no kubeconfig; fails the test, saying how to install it, when it is not on PATH or exits non-zero. */
export function kubectl(args: readonly string[]): Promise<{ stdout: string }> {
  return new Promise((resolve, reject) => {
    execFile('kubectl', [...args], { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')
        return reject(
          new Error(
            'kubectl is not on PATH: install it (apt-get install kubernetes-client) to check the route with a client that is not ours',
          ),
        );
      if (error !== null) return reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`));
      resolve({ stdout });
    });
  });
}

/** `kubectl --kubeconfig <kubeconfig> …` to its end: its exit code and output; never throws on a non-zero exit. */
export function kubectlAs(kubeconfig: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfig, ...args], { stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', (error) =>
      reject(
        (error as NodeJS.ErrnoException).code === 'ENOENT'
          ? new Error(
              'kubectl is not on PATH: npm test puts the control plane’s own first (packages/testkit/control-plane/build.sh builds it)',
            )
          : error,
      ),
    );
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `kubectl --kubeconfig <kubeconfig> …`: its output; rejects with its stderr on a non-zero exit. */
export async function kubectlOk(kubeconfig: string, ...args: string[]): Promise<string> {
  const r = await kubectlAs(kubeconfig, ...args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
