/**
 * Values that are not settings but stand-ins for one: what `.env.example`
 * (create-app's `renderEnvExample`) writes, and the usual hand-written forms.
 * A copied-but-unedited `.env.example` must fail at start naming each
 * variable, not with a format error about the stand-in.
 */
const PLACEHOLDER = [
  /replace[-_ ]?(with|me)\b/i, // replace-with-the-client-secret, whsec_replace-with-…, REPLACE_ME
  /change[-_ ]?me\b/i, // changeme, change-me
  /\brun[-_ ]npx\b/i, // run-npx-store-app-keygen
  /^<[^>]*>$/, // <your-secret>
  /^your[-_ ]/i, // your-client-secret
  /^[a-z]+_x{6,}$/i, // app_xxxxxxxxxxxxxxxx (an all-x value is left alone: tests use them)
  /^(todo|tbd|fixme|placeholder|secret|example)$/i,
];

/** True when `value` is a placeholder rather than a real setting. */
export function isPlaceholder(value: string): boolean {
  const v = value.trim();
  return v !== '' && PLACEHOLDER.some((re) => re.test(v));
}
