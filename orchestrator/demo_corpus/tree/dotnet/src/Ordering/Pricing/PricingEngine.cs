namespace Acme.Ordering.Pricing;

public sealed record PriceQuote(Money Subtotal, Money Total, IReadOnlyList<string> Applied);

/// <summary>Runs every pricing rule over an order, in rule order, and returns the quote.</summary>
public sealed class PricingEngine
{
    private readonly IReadOnlyList<PricingRule> _rules;

    public PricingEngine(IEnumerable<PricingRule> rules)
    {
        _rules = rules.OrderBy(rule => rule.Order).ToList();
    }

    public PriceQuote Price(Order order)
    {
        var context = new PricingContext(order);
        foreach (var rule in _rules)
        {
            rule.Apply(context);
        }
        return new PriceQuote(order.Subtotal(), context.Running, context.Applied);
    }
}
