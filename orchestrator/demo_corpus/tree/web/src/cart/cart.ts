import { Catalog } from "../catalog/catalog.js";
import { addMoney, zero, type Money } from "../money.js";
import { lineTotal, type CartLine } from "./cartLine.js";

/** What a shopper intends to buy, before checkout. */
export class Cart {
  private readonly lines = new Map<string, CartLine>();

  constructor(
    private readonly catalog: Catalog,
    readonly currency: string,
  ) {}

  add(sku: string, quantity = 1): void {
    if (!Number.isInteger(quantity) || quantity <= 0) {
      throw new RangeError(`quantity must be a positive whole number, got ${quantity}`);
    }
    const product = this.catalog.findBySku(sku);
    const current = this.lines.get(sku)?.quantity ?? 0;
    const wanted = current + quantity;
    if (product.maxPerOrder !== undefined && wanted > product.maxPerOrder) {
      throw new RangeError(`at most ${product.maxPerOrder} of ${sku} per order`);
    }
    this.lines.set(sku, { product, quantity: wanted });
  }

  remove(sku: string): void {
    this.lines.delete(sku);
  }

  items(): CartLine[] {
    return [...this.lines.values()];
  }

  isEmpty(): boolean {
    return this.lines.size === 0;
  }

  total(): Money {
    return this.items().reduce((sum, line) => addMoney(sum, lineTotal(line)), zero(this.currency));
  }
}
