const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * A duration in words, as crictl and docker print a container's age (go-units'
 * `HumanDuration`): `Less than a second`, `1 second`, `45 seconds`, `About a minute`,
 * `5 minutes`, `About an hour`, `3 hours`, `4 days`, `3 weeks`, `5 months`, `2 years`.
 */
export function wordyDuration(ms: number): string {
  const seconds = Math.trunc(ms / SECOND);
  if (seconds < 1) return 'Less than a second';
  if (seconds === 1) return '1 second';
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.trunc(ms / MINUTE);
  if (minutes === 1) return 'About a minute';
  if (minutes < 60) return `${minutes} minutes`;
  // go-units rounds hours to the nearest one.
  const hours = Math.trunc(ms / HOUR + 0.5);
  if (hours === 1) return 'About an hour';
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.trunc(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.trunc(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24 / 30)} months`;
  return `${Math.trunc(Math.trunc(ms / HOUR) / 24 / 365)} years`;
}
