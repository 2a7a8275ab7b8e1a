namespace Acme.Ordering.Pricing;

/// <summary>
/// One step of pricing. The engine runs rules in ascending <see cref="Order"/>;
/// a rule that does not apply to an order leaves the running amount alone.
/// </summary>
public abstract class PricingRule
{
    public abstract string Name { get; }

    public abstract int Order { get; }

    public void Apply(PricingContext context)
    {
        if (!AppliesTo(context))
        {
            return;
        }
        var adjustment = Adjust(context);
        if (adjustment.MinorUnits != 0)
        {
            context.Record(Name, adjustment);
        }
    }

    protected virtual bool AppliesTo(PricingContext context) => true;

    /// <summary>The signed change to the running amount: negative for a discount.</summary>
    protected abstract Money Adjust(PricingContext context);
}
