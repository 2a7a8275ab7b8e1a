using Acme.Ordering;
using Acme.Ordering.Events;
using Acme.Ordering.Pricing;
using Acme.Ordering.Services;
using Xunit;

namespace Acme.Ordering.Tests;

public class OrderServiceTests
{
    private sealed class RecordingPublisher : IEventPublisher
    {
        public List<OrderPlaced> Published { get; } = new();

        public void Publish(OrderPlaced placed) => Published.Add(placed);
    }

    private sealed class FixedClock : TimeProvider
    {
        public override DateTimeOffset GetUtcNow() => new(2024, 1, 1, 0, 0, 0, TimeSpan.Zero);
    }

    private readonly InMemoryOrderRepository _repository = new();
    private readonly RecordingPublisher _events = new();

    private OrderService Service() =>
        new(_repository, new PricingEngine(new PricingRule[] { new TaxRule(20m) }), _events,
            new FixedClock());

    [Fact]
    public void PlacingAnOrderStoresItAndPublishesTheTotal()
    {
        var order = new Order(Guid.NewGuid(), "c-7", "EUR");
        order.AddLine(new OrderLine("SKU-9", 1, new Money(500, "EUR")));

        Service().PlaceOrder(order);

        Assert.Equal(OrderStatus.Placed, _repository.Find(order.Id)!.Status);
        Assert.Equal(new Money(600, "EUR"), Assert.Single(_events.Published).Total);
    }

    [Fact]
    public void AnEmptyOrderIsRefused()
    {
        var order = new Order(Guid.NewGuid(), "c-7", "EUR");

        Assert.Throws<InvalidOperationException>(() => Service().PlaceOrder(order));
    }

    [Fact]
    public void CancellingAnUnknownOrderFails()
    {
        Assert.Throws<KeyNotFoundException>(() => Service().CancelOrder(Guid.NewGuid()));
    }
}
