import { OptionsError } from "./optionsError.js";

/** Parsers of flag values (numbers, sizes, regexes, lists): each failure is one OptionsError line naming the flag. */

export function integer(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value.trim())) throw new OptionsError(`--${name} must be a whole number, got ${JSON.stringify(value)}`);
  const parsed = Number.parseInt(value, 10);
  if (parsed < min) throw new OptionsError(`--${name} must be at least ${min}, got ${parsed}`);
  return parsed;
}

export function seconds(name: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const parsed = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !Number.isFinite(parsed)) {
    throw new OptionsError(`--${name} must be a number of seconds, got ${JSON.stringify(value)}`);
  }
  return parsed;
}

/** Accepts plain bytes or a unit suffix: 500000, 64KB, 10MB, 1.5GB. */
export function parseSize(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const match = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb)?$/i.exec(value.trim());
  if (!match) throw new OptionsError(`--${name} must be a size like 1000000, 64KB, 10MB or 1GB, got ${JSON.stringify(value)}`);
  const units: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12 };
  return Math.round(Number(match[1]) * units[(match[2] ?? "b").toLowerCase()]);
}

export function regexList(name: string, values: string[] | undefined): RegExp[] {
  return (values ?? []).map((source) => {
    try {
      return new RegExp(source);
    } catch (err) {
      throw new OptionsError(`--${name} is not a valid regular expression: ${JSON.stringify(source)}`);
    }
  });
}

/** A comma-separated (repeatable) flag whose values must come from `choices`; duplicates dropped. */
export function choiceList<T extends string>(name: string, values: string[] | undefined, choices: readonly T[]): T[] {
  const picked = splitList(values);
  for (const value of picked) {
    if (!(choices as readonly string[]).includes(value)) {
      throw new OptionsError(`--${name} takes a comma-separated list of ${choices.join(", ")}; got ${JSON.stringify(value)}`);
    }
  }
  return [...new Set(picked)] as T[];
}

export function splitList(values: string[] | undefined): string[] {
  return (values ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
}
