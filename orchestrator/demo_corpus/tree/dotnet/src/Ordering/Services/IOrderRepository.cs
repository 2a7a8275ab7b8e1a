namespace Acme.Ordering.Services;

public interface IOrderRepository
{
    Order? Find(Guid id);

    void Save(Order order);
}
