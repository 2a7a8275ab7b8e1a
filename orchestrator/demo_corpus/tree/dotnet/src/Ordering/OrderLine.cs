namespace Acme.Ordering;

/// <summary>One product on an order: what, how many, and the list price of one unit.</summary>
public sealed record OrderLine(string Sku, int Quantity, Money UnitPrice)
{
    public Money Subtotal => UnitPrice.Multiply(Quantity);
}
