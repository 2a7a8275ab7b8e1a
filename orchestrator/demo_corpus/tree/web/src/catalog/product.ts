import type { Money } from "../money.js";

export interface Product {
  readonly sku: string;
  readonly name: string;
  readonly price: Money;
  /** Units that may be bought in one order; undefined means no limit. */
  readonly maxPerOrder?: number;
}
