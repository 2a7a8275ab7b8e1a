namespace Acme.Ordering.Services;

public sealed class InMemoryOrderRepository : IOrderRepository
{
    private readonly Dictionary<Guid, Order> _orders = new();

    public Order? Find(Guid id) => _orders.TryGetValue(id, out var order) ? order : null;

    public void Save(Order order) => _orders[order.Id] = order;
}
