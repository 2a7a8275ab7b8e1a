import type { Money } from "../money.js";

export type Authorization =
  | { readonly ok: true; readonly reference: string }
  | { readonly ok: false; readonly reason: string };

/** A way to pay. Subclasses decide whether an amount can be authorised. */
export abstract class PaymentMethod {
  abstract readonly kind: string;

  authorize(amount: Money): Authorization {
    if (amount.minor <= 0) {
      return { ok: false, reason: "nothing to pay" };
    }
    return this.authorizePositive(amount);
  }

  protected abstract authorizePositive(amount: Money): Authorization;
}
