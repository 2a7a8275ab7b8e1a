namespace Acme.Ordering.Events;

public interface IEventPublisher
{
    void Publish(OrderPlaced placed);
}
