import type { OrdersClient, PlacedOrder } from "../api/ordersClient.js";
import type { Cart } from "../cart/cart.js";
import { formatMoney } from "../money.js";
import type { PaymentMethod } from "../payments/paymentMethod.js";

export class CheckoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CheckoutError";
  }
}

/** Authorises payment for the cart's total, then places the order with the service. */
export async function checkout(
  cart: Cart,
  customerId: string,
  payment: PaymentMethod,
  orders: OrdersClient,
): Promise<PlacedOrder> {
  if (cart.isEmpty()) {
    throw new CheckoutError("the cart is empty");
  }
  const total = cart.total();
  const authorization = payment.authorize(total);
  if (!authorization.ok) {
    throw new CheckoutError(`payment of ${formatMoney(total)} refused: ${authorization.reason}`);
  }
  return orders.placeOrder(customerId, cart.items());
}
