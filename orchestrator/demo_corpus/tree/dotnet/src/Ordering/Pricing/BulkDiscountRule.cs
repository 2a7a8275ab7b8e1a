namespace Acme.Ordering.Pricing;

/// <summary>A percentage off when an order holds at least a threshold number of units.</summary>
public sealed class BulkDiscountRule : PricingRule
{
    private readonly int _minimumUnits;
    private readonly decimal _percent;

    public BulkDiscountRule(int minimumUnits, decimal percent)
    {
        _minimumUnits = minimumUnits;
        _percent = percent;
    }

    public override string Name => "bulk";

    public override int Order => 10;

    protected override bool AppliesTo(PricingContext context) =>
        context.Order.TotalQuantity > _minimumUnits;

    protected override Money Adjust(PricingContext context) =>
        Money.Zero(context.Order.Currency).Subtract(context.Running.Percent(_percent));
}
