import { KubeletError, type ContainerRuntime, type PullCredential } from '@kubelet-ts/core';
import type { TestApi } from './test-api.js';

/** An image of a registry that wants credentials, set up for one contract run. */
export interface PrivateImage {
  /** Its full name, which the runtime does not hold yet. */
  readonly image: string;
  /** The one user name and password the registry lets pull it. */
  readonly username: string;
  readonly password: string;
  /** Removes the image from the runtime (when pulled) and whatever `start` made (a registry). */
  close(): Promise<void>;
}

/** Declared by runtimes whose image service pulls with credentials (all of this project's). */
export interface PullSecretsCapability {
  /** Makes an image only the given credentials may pull (a registry of the test's, or the fake's own). */
  readonly privateImage: () => Promise<PrivateImage>;
}

interface PullSecretsContractOptions {
  readonly name: string;
  readonly pullSecrets?: PullSecretsCapability;
  readonly testApi: TestApi;
}

/**
 * `ImageService.pull(image, credentials)`: a registry's refusal is `NotFound` with its words and no
 * password in them, pulls with other credentials share no transfer, and the right ones pull.
 */
export function pullSecretsContract(
  getRuntime: () => ContainerRuntime,
  { name, pullSecrets, testApi: { afterAll, beforeAll, describe, expect, it } }: PullSecretsContractOptions,
): void {
  if (pullSecrets === undefined) return;
  describe(`pull credentials: ${name}`, () => {
    let target: PrivateImage;
    const credential = (password: string): PullCredential => ({ username: target.username, password, source: 'Secret contract/regcred' });
    const refusal = async (call: Promise<void>): Promise<KubeletError> => {
      const error = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(KubeletError);
      return error as KubeletError;
    };

    beforeAll(async () => {
      target = await pullSecrets.privateImage();
    });
    afterAll(async () => {
      await target?.close();
    });

    it('is refused NotFound, with the registry’s words and never the password, without credentials or with wrong ones', async () => {
      const runtime = getRuntime();
      const none = await refusal(runtime.images.pull(target.image));
      expect(none.code).toBe('NotFound');
      expect(
        /unauthori[sz]ed|authentication required|no basic auth/i.test(none.message) ? none.message : `no refusal said: ${none.message}`,
      ).toBe(none.message);
      const wrong = await refusal(runtime.images.pull(target.image, credential('not-the-password')));
      expect(wrong.code).toBe('NotFound');
      expect(
        /unauthori[sz]ed|authentication required|denied/i.test(wrong.message) ? wrong.message : `no refusal said: ${wrong.message}`,
      ).toBe(wrong.message);
      expect(wrong.message).not.toContain('not-the-password');
      expect(await runtime.images.hasImage(target.image)).toBe(false);
    });

    it('pulls with the right credentials, beside a concurrent pull with wrong ones that shares no transfer with it', async () => {
      const runtime = getRuntime();
      const [wrong, right] = await Promise.all([
        runtime.images.pull(target.image, credential('still-not-it')).then(
          () => 'pulled',
          (e: unknown) => (e as KubeletError).code,
        ),
        runtime.images.pull(target.image, credential(target.password)).then(
          () => 'pulled',
          (e: unknown) => `${(e as KubeletError).code}: ${(e as Error).message}`,
        ),
      ]);
      expect({ wrong, right }).toEqual({ wrong: 'NotFound', right: 'pulled' });
      expect(await runtime.images.hasImage(target.image)).toBe(true);
    });
  });
}
