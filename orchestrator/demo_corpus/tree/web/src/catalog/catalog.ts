import type { Product } from "./product.js";

export class UnknownProductError extends Error {
  constructor(readonly sku: string) {
    super(`unknown product ${sku}`);
    this.name = "UnknownProductError";
  }
}

/** The products on sale, looked up by SKU. */
export class Catalog {
  private readonly bySku = new Map<string, Product>();

  constructor(products: Iterable<Product>) {
    for (const product of products) {
      this.bySku.set(product.sku, product);
    }
  }

  findBySku(sku: string): Product {
    const product = this.bySku.get(sku);
    if (product === undefined) {
      throw new UnknownProductError(sku);
    }
    return product;
  }

  has(sku: string): boolean {
    return this.bySku.has(sku);
  }
}
