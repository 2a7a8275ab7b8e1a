import type { CartLine } from "../cart/cartLine.js";
import type { Money } from "../money.js";

export interface PlacedOrder {
  readonly orderId: string;
  readonly total: Money;
}

export type Fetch = (url: string, init: { method: string; body: string }) => Promise<{
  ok: boolean;
  status: number;
  json(): Promise<unknown>;
}>;

/** Talks to the ordering service that prices and stores orders. */
export class OrdersClient {
  constructor(
    private readonly baseUrl: string,
    private readonly fetchFn: Fetch,
  ) {}

  async placeOrder(customerId: string, lines: readonly CartLine[]): Promise<PlacedOrder> {
    const body = JSON.stringify({
      customerId,
      lines: lines.map((line) => ({ sku: line.product.sku, quantity: line.quantity })),
    });
    const response = await this.fetchFn(`${this.baseUrl}/orders`, { method: "POST", body });
    if (!response.ok) {
      throw new Error(`placing the order failed with HTTP ${response.status}`);
    }
    return (await response.json()) as PlacedOrder;
  }
}
