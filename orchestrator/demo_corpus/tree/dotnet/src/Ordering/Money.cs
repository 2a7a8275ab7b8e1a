namespace Acme.Ordering;

/// <summary>An amount in one currency, kept in minor units so that sums never drift.</summary>
public readonly record struct Money(long MinorUnits, string Currency)
{
    public static Money Zero(string currency) => new(0, currency);

    public static Money FromDecimal(decimal amount, string currency) =>
        new((long)Math.Round(amount * 100m, MidpointRounding.ToEven), currency);

    public decimal Amount => MinorUnits / 100m;

    public Money Add(Money other)
    {
        EnsureSameCurrency(other);
        return this with { MinorUnits = MinorUnits + other.MinorUnits };
    }

    public Money Subtract(Money other)
    {
        EnsureSameCurrency(other);
        return this with { MinorUnits = MinorUnits - other.MinorUnits };
    }

    public Money Multiply(int quantity) => this with { MinorUnits = MinorUnits * quantity };

    /// <summary>A percentage of this amount, rounded half to even on the minor unit.</summary>
    public Money Percent(decimal percent) => Round(MinorUnits * percent / 100m);

    private Money Round(decimal minorUnits) =>
        this with { MinorUnits = (long)Math.Round(minorUnits, MidpointRounding.ToEven) };

    private void EnsureSameCurrency(Money other)
    {
        if (other.Currency != Currency)
        {
            throw new InvalidOperationException(
                $"cannot combine {Currency} with {other.Currency}");
        }
    }

    public override string ToString() => $"{Amount:0.00} {Currency}";
}
