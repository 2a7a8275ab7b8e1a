import assert from "node:assert/strict";
import { test } from "node:test";

import { Cart } from "../src/cart/cart.js";
import { Catalog, UnknownProductError } from "../src/catalog/catalog.js";
import { formatMoney, money } from "../src/money.js";

const catalog = new Catalog([
  { sku: "MUG", name: "Mug", price: money(850, "EUR") },
  { sku: "TEE", name: "T-shirt", price: money(1999, "EUR"), maxPerOrder: 3 },
]);

test("the total sums every line", () => {
  const cart = new Cart(catalog, "EUR");
  cart.add("MUG", 2);
  cart.add("TEE");
  assert.equal(formatMoney(cart.total()), "36.99 EUR");
});

test("adding the same sku again raises its quantity", () => {
  const cart = new Cart(catalog, "EUR");
  cart.add("MUG");
  cart.add("MUG");
  assert.deepEqual(cart.items().map((line) => line.quantity), [2]);
});

test("the per-order limit counts units already in the cart", () => {
  const cart = new Cart(catalog, "EUR");
  cart.add("TEE", 2);
  assert.throws(() => cart.add("TEE", 2), RangeError);
});

test("an unknown sku is refused", () => {
  const cart = new Cart(catalog, "EUR");
  assert.throws(() => cart.add("HAT"), UnknownProductError);
});
