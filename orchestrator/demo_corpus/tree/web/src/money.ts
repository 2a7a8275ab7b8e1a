/** An amount in minor units (cents), so that sums never drift. */
export interface Money {
  readonly minor: number;
  readonly currency: string;
}

export function money(minor: number, currency: string): Money {
  if (!Number.isInteger(minor)) {
    throw new RangeError(`money must be whole minor units, got ${minor}`);
  }
  return { minor, currency };
}

export function zero(currency: string): Money {
  return money(0, currency);
}

export function addMoney(a: Money, b: Money): Money {
  assertSameCurrency(a, b);
  return money(a.minor + b.minor, a.currency);
}

export function multiplyMoney(a: Money, factor: number): Money {
  return money(Math.round(a.minor * factor), a.currency);
}

export function formatMoney(m: Money): string {
  const sign = m.minor < 0 ? "-" : "";
  const abs = Math.abs(m.minor);
  const units = Math.floor(abs / 100);
  const cents = String(abs % 100).padStart(2, "0");
  return `${sign}${units}.${cents} ${m.currency}`;
}

function assertSameCurrency(a: Money, b: Money): void {
  if (a.currency !== b.currency) {
    throw new TypeError(`cannot combine ${a.currency} with ${b.currency}`);
  }
}
