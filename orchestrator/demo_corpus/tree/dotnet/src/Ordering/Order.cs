namespace Acme.Ordering;

public sealed class Order
{
    private readonly List<OrderLine> _lines = new();

    public Order(Guid id, string customerId, string currency)
    {
        Id = id;
        CustomerId = customerId;
        Currency = currency;
    }

    public Guid Id { get; }

    public string CustomerId { get; }

    public string Currency { get; }

    public OrderStatus Status { get; private set; } = OrderStatus.Draft;

    public string? CouponCode { get; set; }

    public Money Total { get; private set; }

    public IReadOnlyList<OrderLine> Lines => _lines;

    public int TotalQuantity => _lines.Sum(line => line.Quantity);

    public void AddLine(OrderLine line)
    {
        if (Status != OrderStatus.Draft)
        {
            throw new InvalidOperationException($"order {Id} is {Status} and cannot change");
        }
        if (line.UnitPrice.Currency != Currency)
        {
            throw new InvalidOperationException($"order {Id} is priced in {Currency}");
        }
        _lines.Add(line);
    }

    public Money Subtotal() =>
        _lines.Aggregate(Money.Zero(Currency), (sum, line) => sum.Add(line.Subtotal));

    public void MarkPlaced(Money total)
    {
        Total = total;
        Status = OrderStatus.Placed;
    }

    public void Cancel()
    {
        if (Status == OrderStatus.Cancelled)
        {
            return;
        }
        Status = OrderStatus.Cancelled;
    }
}
