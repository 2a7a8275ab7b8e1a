namespace Acme.Ordering;

public enum OrderStatus
{
    Draft,
    Placed,
    Cancelled,
}
