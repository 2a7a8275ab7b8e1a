import type { Money } from "../money.js";
import { PaymentMethod, type Authorization } from "./paymentMethod.js";

/** A prepaid voucher in one currency, valid up to and including its expiry day. */
export class VoucherPayment extends PaymentMethod {
  readonly kind = "voucher";

  constructor(
    private readonly code: string,
    private readonly balance: Money,
    private readonly expires: Date,
    private readonly now: () => Date = () => new Date(),
  ) {
    super();
  }

  protected authorizePositive(amount: Money): Authorization {
    if (amount.currency !== this.balance.currency) {
      return { ok: false, reason: `voucher ${this.code} is in ${this.balance.currency}` };
    }
    if (this.now() >= this.expires) {
      return { ok: false, reason: `voucher ${this.code} has expired` };
    }
    if (amount.minor > this.balance.minor) {
      return { ok: false, reason: `voucher ${this.code} does not cover the amount` };
    }
    return { ok: true, reference: `voucher-${this.code}` };
  }
}
