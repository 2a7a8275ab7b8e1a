import type { Product } from "../catalog/product.js";
import { multiplyMoney, type Money } from "../money.js";

export interface CartLine {
  readonly product: Product;
  readonly quantity: number;
}

export function lineTotal(line: CartLine): Money {
  return multiplyMoney(line.product.price, line.quantity);
}
