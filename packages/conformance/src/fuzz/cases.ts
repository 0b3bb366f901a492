import fc from 'fast-check';
import { invalidManifest, type InvalidManifest } from './mutations.js';
import { documentStyle, renderDocument, type DocumentStyle } from './render.js';
import { randomText, unreadableText, type UnreadableText } from './unreadable.js';
import { validManifest, type ManifestInput, type ValidManifestOptions } from './valid-manifests.js';

/** One fuzz input, by what a source must do with it. */
export type FuzzInput =
  | { readonly kind: 'valid'; readonly manifest: ManifestInput; readonly style: DocumentStyle }
  | { readonly kind: 'invalid'; readonly invalid: InvalidManifest; readonly style: DocumentStyle }
  | { readonly kind: 'unreadable'; readonly text: UnreadableText }
  | { readonly kind: 'random'; readonly text: UnreadableText };

/** The mix the fuzz suites use: mostly manifests one mutation away from valid, where bugs hide. */
export function fuzzInput(options: ValidManifestOptions = {}): fc.Arbitrary<FuzzInput> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('valid' as const), manifest: validManifest(options), style: documentStyle }) },
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('invalid' as const), invalid: invalidManifest(options), style: documentStyle }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('unreadable' as const), text: unreadableText() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('random' as const), text: randomText() }) },
  );
}

/** The bytes a source is given for `input`. */
export function fuzzBytes(input: FuzzInput): Uint8Array {
  switch (input.kind) {
    case 'valid':
      return new TextEncoder().encode(renderDocument(input.manifest, input.style));
    case 'invalid':
      return new TextEncoder().encode(renderDocument(input.invalid.input, input.style));
    default:
      return input.text.bytes;
  }
}

/** A short description for failure messages and figures. */
export function describeFuzzInput(input: FuzzInput): string {
  switch (input.kind) {
    case 'valid':
      return `valid manifest ${JSON.stringify(input.manifest['id'])} (${input.style})`;
    case 'invalid':
      return `invalid manifest (${input.invalid.mutation} at ${JSON.stringify(input.invalid.path)}, ${input.style})`;
    default:
      return `${input.kind} text (${input.text.kind}, ${input.text.bytes.length} bytes)`;
  }
}
