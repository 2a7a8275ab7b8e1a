namespace Acme.Ordering.Pricing;

/// <summary>The running state of one pricing pass: the order and the amount so far.</summary>
public sealed class PricingContext
{
    public PricingContext(Order order)
    {
        Order = order;
        Running = order.Subtotal();
    }

    public Order Order { get; }

    public Money Running { get; private set; }

    public List<string> Applied { get; } = new();

    internal void Record(string rule, Money adjustment)
    {
        Running = Running.Add(adjustment);
        Applied.Add($"{rule}: {adjustment}");
    }
}
