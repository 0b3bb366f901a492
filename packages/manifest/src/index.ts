// Manifests from text and from code, for sources and the CLI: YAML or JSON decoded within bounds,
// 2014 manifests and Kubernetes v1 Pods read into core's domain manifest (validated by core's
// validateManifest), conversion back to either format, and what every source does with a set.

// Reading text
export {
  parseManifests,
  rejectionError,
  retainLastGood,
  type ManifestWarnings,
  type ParsedManifests,
  type ParseOptions,
  type RejectedManifest,
} from './parse.js';

// Kubernetes v1 Pods
export { toV1Pod, type V1Pod } from './v1/to-v1.js';
export { toV1beta1 } from './v1/to-v1beta1.js';
export { isFromV1Pod, validateV1Pod } from './v1/validate-v1.js';
export { IGNORED_V1_FIELDS } from './v1/fields.js';
export { v1PodId } from './v1/pod-id.js';
export { ceilMillis, ceilUnits, parseQuantity } from './v1/quantity.js';

// What sources share
export { ManifestIntake, type HeldDocument, type IdFor, type ManifestIntakeOptions } from './manifest-intake.js';
export { WarningReporter } from './warning-reporter.js';
export { DeliveredSet, firstOfEachId } from './set-delivery.js';
export { DEFAULT_MAX_MANIFEST_BYTES, DEFAULT_MAX_MANIFESTS, sourceLimitProblem, type SourceLimits } from './source-limits.js';
export { StaticManifestSource, type StaticManifestSourceOptions } from './static-source.js';
