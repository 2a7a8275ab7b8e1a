namespace Acme.Ordering.Pricing;

/// <summary>A fixed amount off for a known coupon code, never taking the order below zero.</summary>
public sealed class CouponRule : PricingRule
{
    private readonly IReadOnlyDictionary<string, Money> _coupons;

    public CouponRule(IReadOnlyDictionary<string, Money> coupons)
    {
        _coupons = coupons;
    }

    public override string Name => "coupon";

    public override int Order => 20;

    protected override bool AppliesTo(PricingContext context) =>
        context.Order.CouponCode is { } code && _coupons.ContainsKey(code);

    protected override Money Adjust(PricingContext context)
    {
        var value = _coupons[context.Order.CouponCode!];
        var capped = value.MinorUnits > context.Running.MinorUnits ? context.Running : value;
        return Money.Zero(context.Order.Currency).Subtract(capped);
    }
}
