using Acme.Ordering;
using Acme.Ordering.Pricing;
using Xunit;

namespace Acme.Ordering.Tests;

public class PricingEngineTests
{
    private static Order OrderOf(int quantity, long unitMinor)
    {
        var order = new Order(Guid.NewGuid(), "c-1", "EUR");
        order.AddLine(new OrderLine("SKU-1", quantity, new Money(unitMinor, "EUR")));
        return order;
    }

    [Fact]
    public void TaxIsChargedOnTheSubtotal()
    {
        var engine = new PricingEngine(new PricingRule[] { new TaxRule(20m) });

        var quote = engine.Price(OrderOf(2, 1_000));

        Assert.Equal(new Money(2_400, "EUR"), quote.Total);
    }

    [Fact]
    public void BulkDiscountAppliesAboveTheThreshold()
    {
        var engine = new PricingEngine(new PricingRule[] { new BulkDiscountRule(10, 10m) });

        var quote = engine.Price(OrderOf(12, 1_000));

        Assert.Equal(new Money(10_800, "EUR"), quote.Total);
    }

    [Fact]
    public void CouponNeverTakesTheTotalBelowZero()
    {
        var coupons = new Dictionary<string, Money> { ["BIG"] = new Money(50_000, "EUR") };
        var engine = new PricingEngine(new PricingRule[] { new CouponRule(coupons) });
        var order = OrderOf(1, 1_000);
        order.CouponCode = "BIG";

        var quote = engine.Price(order);

        Assert.Equal(Money.Zero("EUR"), quote.Total);
    }

    [Fact]
    public void RulesRunInRuleOrderNotRegistrationOrder()
    {
        var engine = new PricingEngine(new PricingRule[] { new TaxRule(10m), new BulkDiscountRule(1, 50m) });

        var quote = engine.Price(OrderOf(2, 1_000));

        Assert.Equal(new[] { "bulk: -10.00 EUR", "tax: 1.00 EUR" }, quote.Applied);
    }
}
