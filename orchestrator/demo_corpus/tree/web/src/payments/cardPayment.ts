import type { Money } from "../money.js";
import { PaymentMethod, type Authorization } from "./paymentMethod.js";

export class CardPayment extends PaymentMethod {
  readonly kind = "card";

  constructor(
    private readonly last4: string,
    private readonly limitMinor: number,
  ) {
    super();
  }

  protected authorizePositive(amount: Money): Authorization {
    if (amount.minor > this.limitMinor) {
      return { ok: false, reason: `card ending ${this.last4} declined: over limit` };
    }
    return { ok: true, reference: `card-${this.last4}-${amount.minor}` };
  }
}
