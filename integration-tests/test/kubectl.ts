import { execFile } from 'node:child_process';

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
