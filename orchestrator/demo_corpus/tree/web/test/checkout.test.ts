import assert from "node:assert/strict";
import { test } from "node:test";

import { OrdersClient, type Fetch } from "../src/api/ordersClient.js";
import { Cart } from "../src/cart/cart.js";
import { Catalog } from "../src/catalog/catalog.js";
import { checkout, CheckoutError } from "../src/checkout/checkout.js";
import { money } from "../src/money.js";
import { CardPayment } from "../src/payments/cardPayment.js";
import { VoucherPayment } from "../src/payments/voucherPayment.js";

const catalog = new Catalog([{ sku: "MUG", name: "Mug", price: money(850, "EUR") }]);

function stubOrders(): { client: OrdersClient; bodies: string[] } {
  const bodies: string[] = [];
  const fetchFn: Fetch = async (_url, init) => {
    bodies.push(init.body);
    return { ok: true, status: 201, json: async () => ({ orderId: "o-1", total: money(850, "EUR") }) };
  };
  return { client: new OrdersClient("http://orders.test", fetchFn), bodies };
}

test("a card within its limit places the order", async () => {
  const cart = new Cart(catalog, "EUR");
  cart.add("MUG");
  const { client, bodies } = stubOrders();
  const placed = await checkout(cart, "c-1", new CardPayment("4242", 10_000), client);
  assert.equal(placed.orderId, "o-1");
  assert.deepEqual(JSON.parse(bodies[0]).lines, [{ sku: "MUG", quantity: 1 }]);
});

test("a card over its limit is refused before the order is placed", async () => {
  const cart = new Cart(catalog, "EUR");
  cart.add("MUG", 3);
  const { client, bodies } = stubOrders();
  await assert.rejects(checkout(cart, "c-1", new CardPayment("4242", 1_000), client), CheckoutError);
  assert.equal(bodies.length, 0);
});

test("an expired voucher is refused", async () => {
  const cart = new Cart(catalog, "EUR");
  cart.add("MUG");
  const { client } = stubOrders();
  const voucher = new VoucherPayment(
    "SPRING",
    money(5_000, "EUR"),
    new Date("2024-03-31T00:00:00Z"),
    () => new Date("2024-04-02T09:00:00Z"),
  );
  await assert.rejects(checkout(cart, "c-1", voucher, client), /expired/);
});

test("an empty cart cannot be checked out", async () => {
  const { client } = stubOrders();
  await assert.rejects(checkout(new Cart(catalog, "EUR"), "c-1", new CardPayment("4242", 1), client), /empty/);
});
