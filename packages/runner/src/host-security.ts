import { readFileSync } from 'node:fs';

/** Where Linux says whether AppArmor is on (`Y`), as the kubelet's AppArmor validator reads it. */
export const APPARMOR_ENABLED_PATH = '/sys/module/apparmor/parameters/enabled';

/**
 * Whether this host enforces AppArmor, so a pod's AppArmor profile can be applied (validation's
 * `appArmor` option). A host without the module (or where it cannot be read) does not.
 */
export function hostEnforcesAppArmor(path = APPARMOR_ENABLED_PATH): boolean {
  try {
    return readFileSync(path, 'utf8').trim().startsWith('Y');
  } catch {
    return false;
  }
}
