export { OrdersClient, type PlacedOrder } from "./api/ordersClient.js";
export { Cart } from "./cart/cart.js";
export { Catalog, UnknownProductError } from "./catalog/catalog.js";
export type { Product } from "./catalog/product.js";
export { checkout, CheckoutError } from "./checkout/checkout.js";
export { addMoney, formatMoney, money, type Money } from "./money.js";
export { CardPayment } from "./payments/cardPayment.js";
export { PaymentMethod } from "./payments/paymentMethod.js";
export { VoucherPayment } from "./payments/voucherPayment.js";
