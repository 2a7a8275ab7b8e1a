namespace Acme.Ordering.Events;

public sealed record OrderPlaced(Guid OrderId, string CustomerId, Money Total, DateTimeOffset At);
