namespace Acme.Ordering.Pricing;

/// <summary>Sales tax on the discounted amount; always the last rule to run.</summary>
public sealed class TaxRule : PricingRule
{
    private readonly decimal _ratePercent;

    public TaxRule(decimal ratePercent)
    {
        _ratePercent = ratePercent;
    }

    public override string Name => "tax";

    public override int Order => 100;

    protected override Money Adjust(PricingContext context) => context.Running.Percent(_ratePercent);
}
