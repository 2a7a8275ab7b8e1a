using Acme.Ordering.Events;
using Acme.Ordering.Pricing;

namespace Acme.Ordering.Services;

/// <summary>Places and cancels orders: prices them, stores them, and announces them.</summary>
public sealed class OrderService
{
    private readonly IOrderRepository _repository;
    private readonly PricingEngine _pricing;
    private readonly IEventPublisher _events;
    private readonly TimeProvider _clock;

    public OrderService(IOrderRepository repository, PricingEngine pricing,
                        IEventPublisher events, TimeProvider clock)
    {
        _repository = repository;
        _pricing = pricing;
        _events = events;
        _clock = clock;
    }

    public PriceQuote PlaceOrder(Order order)
    {
        if (order.Lines.Count == 0)
        {
            throw new InvalidOperationException($"order {order.Id} has no lines");
        }
        var quote = _pricing.Price(order);
        order.MarkPlaced(quote.Total);
        _repository.Save(order);
        _events.Publish(new OrderPlaced(order.Id, order.CustomerId, quote.Total,
                                        _clock.GetUtcNow()));
        return quote;
    }

    public void CancelOrder(Guid id)
    {
        var order = _repository.Find(id)
            ?? throw new KeyNotFoundException($"no order {id}");
        order.Cancel();
        _repository.Save(order);
    }
}
